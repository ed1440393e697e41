{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- set v = mapdata.volume %}
{%- set node = salt['pillar.get']('node:mkv', {}) %}
{%- set disks = salt['pillar.get']('node:disks:data', []) %}
{%- set roles = salt['pillar.get']('node:roles', []) %}
{%- if not node %}
{{- raise('mkv.volume: pillar node:mkv is missing for ' ~ opts['id']) }}
{%- endif %}
{%- if node.subvolumes != disks | length %}
{{- raise('mkv.volume: node:mkv:subvolumes=' ~ node.subvolumes ~ ' but ' ~ disks | length ~ ' data disks on ' ~ opts['id']) }}
{%- endif %}
# mkv.volume: a stock nginx exactly as minikeyvalue's `volume` script configures it
# (DAV PUT/DELETE, JSON autoindex for rebuild), one svNN directory per data disk.

mkv-volume-pkg-installed:
  pkg.installed:
    - name: {{ v.package }}

{%- if 'provisioning' not in roles %}

mkv-volume-service-dead-system-nginx:
  service.dead:
    - name: {{ v.system_service }}
    - enable: false
    - require:
      - pkg: mkv-volume-pkg-installed
{%- endif %}

mkv-volume-file-directory-root:
  file.directory:
    - name: {{ node.root }}
    - user: {{ v.user }}
    - group: {{ v.group }}
    - mode: '0755'
    - require:
      - pkg: mkv-volume-pkg-installed

mkv-volume-file-directory-root-body-temp:
  file.directory:
    - name: {{ node.root }}/.body_temp
    - user: {{ v.user }}
    - group: {{ v.group }}
    - mode: '0700'
    - require:
      - file: mkv-volume-file-directory-root

{%- for disk in disks %}
{%- if mapdata.hardware %}

mkv-volume-mount-mounted-{{ disk.name }}:
  mount.mounted:
    - name: {{ disk.mount }}
    - device: LABEL={{ disk.name }}
    - fstype: {{ v.fstype }}
    - opts: {{ v.mount_opts | json }}
    - mkmnt: true
    - persist: true
    - require:
      - file: mkv-volume-file-directory-root
{%- endif %}

mkv-volume-file-directory-{{ disk.name }}:
  file.directory:
    - name: {{ disk.mount }}
    - user: {{ v.user }}
    - group: {{ v.group }}
    - mode: '0755'
    - require:
{%- if mapdata.hardware %}
      - mount: mkv-volume-mount-mounted-{{ disk.name }}
{%- else %}
      - file: mkv-volume-file-directory-root
{%- endif %}

# PUT bodies land on the same disk as their key (a rename, not a copy); a dot
# directory is not listed by nginx's autoindex, so rebuild never sees it.
mkv-volume-file-directory-{{ disk.name }}-body-temp:
  file.directory:
    - name: {{ disk.mount }}/.body_temp
    - user: {{ v.user }}
    - group: {{ v.group }}
    - mode: '0700'
    - require:
      - file: mkv-volume-file-directory-{{ disk.name }}
{%- endfor %}

mkv-volume-file-managed-conf:
  file.managed:
    - name: {{ v.conf }}
    - source: salt://{{ tplroot }}/files/volume-nginx.conf.jinja
    - template: jinja
    - makedirs: true
    - mode: '0644'
    - check_cmd: {{ v.nginx }} -t -q -c
    - context:
        port: {{ node.port }}
        root: {{ node.root | json }}
        user: {{ v.user | json }}
        disks: {{ disks | json }}
    - require:
      - pkg: mkv-volume-pkg-installed

mkv-volume-file-managed-unit:
  file.managed:
    - name: {{ v.unit_dir }}/{{ v.unit }}
    - source: salt://{{ tplroot }}/files/mkv-volume.service.jinja
    - template: jinja
    - mode: '0644'
    - context:
        nginx: {{ v.nginx | json }}
        conf: {{ v.conf | json }}
        root: {{ node.root | json }}
        volume: {{ node.volume | json }}

# nginx -t before any restart: a bad configuration fails the highstate, loudly, and
# the running volume server keeps its old one
mkv-volume-cmd-run-nginx-test:
  cmd.run:
    - name: {{ v.nginx }} -t -q -c {{ v.conf }}
    - onchanges:
      - file: mkv-volume-file-managed-conf
      - file: mkv-volume-file-managed-unit

mkv-volume-service-running:
  service.running:
    - name: {{ v.unit }}
    - enable: true
    - require:
      - cmd: mkv-volume-cmd-run-nginx-test
      - file: mkv-volume-file-directory-root-body-temp
{%- for disk in disks %}
      - file: mkv-volume-file-directory-{{ disk.name }}-body-temp
{%- endfor %}
    - watch:
      - file: mkv-volume-file-managed-conf
      - file: mkv-volume-file-managed-unit
