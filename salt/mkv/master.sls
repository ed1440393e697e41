{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- from 'lib/macros.jinja' import verify_unit %}
{%- set m = mapdata.master %}
{%- set artifact = salt['slsutil.merge'](m.artifact, salt['pillar.get']('mkv:artifact', {}), strategy='recurse') %}
{%- set arrays = salt['pillar.get']('mkv:arrays', {}) %}
{%- set mine = [] %}
{%- for name, a in arrays | dictsort if a.master == opts['id'] %}
{%-   do mine.append(name) %}
{%-   if a.volumes | length < a.replicas %}
{{-     raise('mkv.master: array ' ~ name ~ ' has ' ~ a.volumes | length ~ ' volumes for ' ~ a.replicas ~ ' replicas') }}
{%-   endif %}
{%- endfor %}
# mkv.master: one minikeyvalue master (systemd unit) per array this host is master of.
# Flags come from pillar mkv:arrays; the -volumes strings are the inventory's
# host:port names, identical everywhere (placement hashes the names).

mkv-master-user-present:
  user.present:
    - name: {{ m.user }}
    - system: true
    - shell: /usr/sbin/nologin
    - home: /var/lib/mkv
    - createhome: false

{%- if not artifact.sha256 %}

mkv-master-test-fail-without-changes-artifact:
  test.fail_without_changes:
    - name: >-
        mkv.master: no minikeyvalue binary configured. Build mkv (geohot/minikeyvalue,
        `cd src && go build -o mkv`), put it at {{ artifact.source }} on this host and set
        pillar mkv:artifact:sha256 (see docs/salt.md).
{%- set binary_req = 'test: mkv-master-test-fail-without-changes-artifact' %}
{%- else %}
{%-   if artifact.source.startswith('/') %}

mkv-master-cmd-run-artifact-present:
  cmd.run:
    - name: >-
        echo "mkv.master: artifact {{ artifact.source }} is missing on {{ opts['id'] }}:
        build minikeyvalue and copy the binary there (see docs/salt.md)" >&2; exit 1
    - unless: test -f {{ artifact.source }}
{%-   endif %}

mkv-master-file-managed-binary:
  file.managed:
    - name: {{ m.binary }}
    - source: {{ artifact.source }}
    - source_hash: sha256={{ artifact.sha256 }}
    - user: root
    - group: root
    - mode: '0755'
{%-   if artifact.source.startswith('/') %}
    - require:
      - cmd: mkv-master-cmd-run-artifact-present
{%-   endif %}
{%- set binary_req = 'file: mkv-master-file-managed-binary' %}
{%- endif %}

{%- for name in mine %}
{%- set a = arrays[name] %}

mkv-master-file-directory-{{ name }}:
  file.directory:
    - name: {{ a.index_path }}
    - user: {{ m.user }}
    - group: {{ m.user }}
    - mode: '0750'
    - makedirs: true
    - require:
      - user: mkv-master-user-present

mkv-master-file-managed-unit-{{ name }}:
  file.managed:
    - name: {{ m.unit_dir }}/mkv-{{ name }}.service
    - source: salt://{{ tplroot }}/files/mkv-master.service.jinja
    - template: jinja
    - mode: '0644'
    - context:
        name: {{ name | json }}
        array: {{ a | json }}
        binary: {{ m.binary | json }}
        user: {{ m.user | json }}

# the unit verifies before the service starts (lib/macros.jinja)
{{ verify_unit('mkv-master-cmd-run-verify-unit-' ~ name, m.unit_dir ~ '/mkv-' ~ name ~ '.service',
               ['file: mkv-master-file-managed-unit-' ~ name]) }}

mkv-master-service-running-{{ name }}:
  service.running:
    - name: mkv-{{ name }}.service
    - enable: true
    - require:
      - file: mkv-master-file-directory-{{ name }}
      - cmd: mkv-master-cmd-run-verify-unit-{{ name }}
    - watch:
      - {{ binary_req }}
      - file: mkv-master-file-managed-unit-{{ name }}
{%- endfor %}
