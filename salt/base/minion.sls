{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- set minion = mapdata.salt_minion %}

# The minion's own configuration, as the autoinstall late-commands first wrote it,
# plus master_finger (pins the master's key) and reconnect jitter for a fleet restart.
# master_finger: the inventory's site.salt.master_finger (recorded with `fleet keys
# finger`, never typed), else the fingerprint of the master key this minion already
# authenticated (key.finger_master): from then on no other master is accepted.
base-minion-file-managed-conf:
  file.managed:
    - name: {{ minion.conf }}
    - source: salt://{{ tplroot }}/files/minion.conf.jinja
    - template: jinja
    - mode: '0644'
    - check_cmd: /usr/bin/python3 -c 'import sys, yaml; yaml.safe_load(open(sys.argv[1]))'
    - context:
        id: {{ opts['id'] | json }}
        master: {{ salt['pillar.get']('site:salt:master_address') | json }}
        sizing: {{ salt['pillar.get']('site:salt:sizing:minion') | json }}
        master_finger: {{ (salt['pillar.get']('site:salt:master_finger') or salt['key.finger_master']()) | json }}

base-minion-file-managed-id:
  file.managed:
    - name: {{ minion.minion_id_file }}
    - contents: {{ opts['id'] | json }}
    - mode: '0644'

# Restart in the background once this run has returned: restarting in the foreground
# would kill the job that is applying it, and so would a fixed delay (the rest of a first
# highstate takes minutes). The shell's parent is the job's process: wait until it has
# sent its return and exited, then restart.
base-minion-cmd-run-restart:
  cmd.run:
    - name: >-
        job=$PPID; while kill -0 "$job" 2>/dev/null; do sleep 1; done;
        sleep 2; systemctl restart {{ minion.service }}
    - bg: true
    - onchanges:
      - file: base-minion-file-managed-conf
