{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}

include:
  - .apt

base-time-timezone-system:
  timezone.system:
    - name: {{ salt['pillar.get']('site:timezone', 'UTC') | json }}
    - utc: true

base-time-file-managed-chrony:
  file.managed:
    - name: {{ mapdata.chrony.conf }}
    - source: salt://{{ tplroot }}/files/chrony.conf.jinja
    - template: jinja
    - mode: '0644'
    # chronyd -p parses the whole configuration and exits non-zero on a syntax error;
    # the file it checks is in chrony's own directory: chronyd's AppArmor profile (Debian,
    # Ubuntu) lets it read no file in /tmp, Salt's default (found by make test-vm)
    - check_cmd: {{ mapdata.chrony.binary }} -p -f
    - tmp_dir: {{ mapdata.chrony.conf.rsplit('/', 1)[0] | json }}
    - context:
        servers: {{ salt['pillar.get']('site:ntp_servers', []) | json }}
    - require:
      - sls: base.apt

{%- if mapdata.container %}

# A container cannot set the host's clock: chronyd runs without clock control (-x),
# and the unit's CAP_SYS_TIME condition is cleared so that it starts at all.
base-time-file-managed-chrony-container-dropin:
  file.managed:
    - name: /etc/systemd/system/{{ mapdata.chrony.service }}.service.d/60-fleet-container.conf
    - makedirs: true
    - mode: '0644'
    - contents: |
        # Managed by Salt (base.time): in a container chronyd must not set the clock.
        [Unit]
        ConditionCapability=
        [Service]
        ExecStart=
        ExecStart=!{{ mapdata.chrony.binary }} $DAEMON_OPTS -x

# systemd reads a new drop-in only on daemon-reload: without it the start below skips
# chrony (the old CAP_SYS_TIME condition) and systemctl still exits 0
base-time-cmd-run-daemon-reload:
  cmd.run:
    - name: systemctl daemon-reload
    - onchanges:
      - file: base-time-file-managed-chrony-container-dropin
{%- endif %}

base-time-service-running-chrony:
  service.running:
    - name: {{ mapdata.chrony.service }}
    - enable: true
    - require:
      - sls: base.apt
{%- if mapdata.container %}
      - cmd: base-time-cmd-run-daemon-reload
{%- endif %}
    - watch:
      - file: base-time-file-managed-chrony
{%- if mapdata.container %}
      - file: base-time-file-managed-chrony-container-dropin
{%- endif %}
