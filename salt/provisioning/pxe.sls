{%- set tplroot = tpldir.split('/')[0] %}
{%- from tplroot ~ '/map.jinja' import mapdata with context %}
{%- set pxe_root = salt['pillar.get']('provisioning:pxe_root') %}
{%- set http_port = salt['pillar.get']('provisioning:http_port', 80) %}
{%- set src = mapdata.checkout ~ '/pxe' %}
{%- if not pxe_root %}
{{- raise('provisioning: pillar provisioning:pxe_root is missing for ' ~ opts['id']) }}
{%- endif %}

provisioning-pxe-pkg-installed:
  pkg.installed:
    - pkgs: {{ mapdata.packages | json }}

provisioning-pxe-file-directory-root:
  file.directory:
    - name: {{ pxe_root }}
    - user: root
    - group: root
    - mode: '0755'
    - makedirs: true

# The rendered pxe/ tree (make render) is copied as a whole, so a removed host's files
# go too. Not served from the Salt fileserver: only this host needs it.
provisioning-pxe-cmd-run-sync:
  cmd.run:
    - name: rsync -a --delete --chmod=D755,F644 {{ src }}/ {{ pxe_root }}/
    - unless: diff -rq {{ src }} {{ pxe_root }}
    - require:
      - pkg: provisioning-pxe-pkg-installed
      - file: provisioning-pxe-file-directory-root

provisioning-pxe-file-managed-dnsmasq:
  file.managed:
    - name: {{ mapdata.dnsmasq.conf }}
    - mode: '0644'
    - contents: |
        # Managed by Salt (provisioning.pxe). Do not edit.
        conf-file={{ pxe_root }}/dnsmasq/dnsmasq.conf
    - require:
      - pkg: provisioning-pxe-pkg-installed

# dnsmasq re-reads dhcp-hostsdir by itself; a restart picks up dnsmasq.conf changes
# and removed MACs. --test parses the whole configuration first.
provisioning-pxe-service-running-dnsmasq:
  service.running:
    - name: {{ mapdata.dnsmasq.service }}
    - enable: true
    - onlyif: dnsmasq --test --conf-file={{ pxe_root }}/dnsmasq/dnsmasq.conf
    - watch:
      - file: provisioning-pxe-file-managed-dnsmasq
      - cmd: provisioning-pxe-cmd-run-sync

provisioning-pxe-file-managed-nginx-site:
  file.managed:
    - name: {{ mapdata.nginx.site }}
    - source: salt://{{ tplroot }}/files/pxe-nginx.conf.jinja
    - template: jinja
    - mode: '0644'
    - context:
        root: {{ (pxe_root ~ '/http') | json }}
        port: {{ http_port }}
    - require:
      - pkg: provisioning-pxe-pkg-installed

provisioning-pxe-file-symlink-nginx-site:
  file.symlink:
    - name: {{ mapdata.nginx.enabled }}
    - target: {{ mapdata.nginx.site }}
    - require:
      - file: provisioning-pxe-file-managed-nginx-site

provisioning-pxe-file-absent-nginx-default:
  file.absent:
    - name: {{ mapdata.nginx.default_site }}
    - require:
      - pkg: provisioning-pxe-pkg-installed

provisioning-pxe-service-running-nginx:
  service.running:
    - name: {{ mapdata.nginx.service }}
    - enable: true
    - onlyif: nginx -t -q
    - watch:
      - file: provisioning-pxe-file-managed-nginx-site
      - file: provisioning-pxe-file-symlink-nginx-site
      - file: provisioning-pxe-file-absent-nginx-default
