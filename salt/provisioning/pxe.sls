{%- set tplroot = tpldir.split('/')[0] %}
{%- from tplroot ~ '/map.jinja' import mapdata with context %}
{%- set pxe_root = salt['pillar.get']('provisioning:pxe_root') %}
{%- set pxe_state = salt['pillar.get']('provisioning:pxe_state', '/var/lib/fleet/pxe-state') %}
{%- set http_port = salt['pillar.get']('provisioning:http_port', 80) %}
{%- set src = mapdata.checkout ~ '/pxe' %}
{#- the Python package cache (provisioning.pycache): its root, served at its path #}
{%- set pycache = salt['pillar.get']('provisioning:python_cache') or {} %}
{%- if not pxe_root %}
{{- raise('provisioning: pillar provisioning:pxe_root is missing for ' ~ opts['id']) }}
{%- endif %}
{#- the fleet page's server: the management address, which on this site is the
    provisioning address (the inventory has no separate management network) #}
{%- set management = salt['pillar.get']('site:provisioning:address', '') %}
{%- set networks = salt['pillar.get']('provisioning:networks', {}).values() %}
{%- set management_cidrs = networks | selectattr('purpose', 'equalto', 'provisioning') | map(attribute='cidr') | list %}
{%- if not management or not management_cidrs %}
{{- raise('provisioning: pillar site:provisioning:address or a provisioning network in provisioning:networks is missing for ' ~ opts['id']) }}
{%- endif %}

provisioning-pxe-pkg-installed:
  pkg.installed:
    - pkgs: {{ (mapdata.packages + mapdata.image_packages) | json }}

provisioning-pxe-file-directory-root:
  file.directory:
    - name: {{ pxe_root }}
    - user: root
    - group: root
    - mode: '0755'
    - makedirs: true

# Run-time boot modes (`fleet pxe set`): per-MAC links, never touched by a render or sync.
provisioning-pxe-file-directory-state:
  file.directory:
    - name: {{ pxe_state }}
    - user: root
    - group: root
    - mode: '0755'
    - makedirs: true

# fleet reinstall's one-time install tokens, the state directory's sibling: out of the
# TFTP root's reach (tftp/state links to the state directory above). nginx reads them
# through the group (setgid: each token gets it, mode 0640); nobody else can.
provisioning-pxe-file-directory-tokens:
  file.directory:
    - name: {{ pxe_state }}-tokens
    - user: root
    - group: {{ mapdata.nginx.group }}
    - mode: '2750'
    - makedirs: true
    - require:
      - pkg: provisioning-pxe-pkg-installed

provisioning-pxe-file-directory-images:
  file.directory:
    - name: {{ mapdata.images_dir }}
    - user: root
    - group: root
    - mode: '0755'
    - makedirs: true

{%- for name, path in mapdata.images | dictsort %}

provisioning-pxe-file-symlink-image-{{ name }}:
  file.symlink:
    - name: {{ mapdata.images_dir }}/{{ name }}
    - target: {{ path }}
    - require:
      - pkg: provisioning-pxe-pkg-installed
      - file: provisioning-pxe-file-directory-images
{%- endfor %}

# The rendered pxe/ tree (make render) is copied as a whole, so a removed host's files
# go too; the boot loaders and the TFTP links below are protected from --delete.
# Not served from the Salt fileserver: only this host needs it.
{%- set keep = (mapdata.bootloaders | list) + ['tftp/state', 'tftp/images'] %}
provisioning-pxe-cmd-run-sync:
  cmd.run:
    - name: rsync -a --delete --chmod=D755,F644 {% for k in keep %}--filter='P /{{ k }}' {% endfor %}{{ src }}/ {{ pxe_root }}/
    - unless: diff -rq {% for k in keep %}-x {{ k.split('/')[-1] }} {% endfor %}{{ src }} {{ pxe_root }}
    - require:
      - pkg: provisioning-pxe-pkg-installed
      - file: provisioning-pxe-file-directory-root

# Boot loaders from the distribution's packages: iPXE for BIOS and UEFI HTTP boot,
# shim + signed network GRUB for UEFI (Secure Boot).
{%- for dest, source in mapdata.bootloaders | dictsort %}

# file.managed, not file.copy: Salt's copy with force reports a change even when the
# files are identical, which would break the zero-change re-apply
provisioning-pxe-file-managed-{{ dest | replace('/', '-') }}:
  file.managed:
    - name: {{ pxe_root }}/{{ dest }}
    - source: file://{{ source }}
    - user: root
    - group: root
    - mode: '0644'
    - show_changes: false
    - require:
      - pkg: provisioning-pxe-pkg-installed
      - cmd: provisioning-pxe-cmd-run-sync
{%- endfor %}

# GRUB builds without HTTP (Debian 12's signed one) read /state/ and /images/ over TFTP.
provisioning-pxe-file-symlink-tftp-state:
  file.symlink:
    - name: {{ pxe_root }}/tftp/state
    - target: {{ pxe_state }}
    - require:
      - cmd: provisioning-pxe-cmd-run-sync
      - file: provisioning-pxe-file-directory-state

provisioning-pxe-file-symlink-tftp-images:
  file.symlink:
    - name: {{ pxe_root }}/tftp/images
    - target: {{ mapdata.images_dir }}
    - require:
      - cmd: provisioning-pxe-cmd-run-sync
      - file: provisioning-pxe-file-directory-images

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
# and removed MACs. --test parses the whole configuration first: a bad one fails this
# state (and so the highstate) and the running dnsmasq keeps its old configuration.
provisioning-pxe-cmd-run-dnsmasq-test:
  cmd.run:
    - name: dnsmasq --test --conf-file={{ pxe_root }}/dnsmasq/dnsmasq.conf
    - onchanges:
      - file: provisioning-pxe-file-managed-dnsmasq
      - cmd: provisioning-pxe-cmd-run-sync

provisioning-pxe-service-running-dnsmasq:
  service.running:
    - name: {{ mapdata.dnsmasq.service }}
    - enable: true
    - require:
      - cmd: provisioning-pxe-cmd-run-dnsmasq-test
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
        state: {{ pxe_state | json }}
        images: {{ mapdata.images_dir | json }}
        port: {{ http_port }}
        page: {{ mapdata.page.dir | json }}
        page_port: {{ mapdata.page.port }}
        management: {{ management | json }}
        management_cidrs: {{ management_cidrs | json }}
        pycache: {{ pycache | json }}
        site_repo: {{ salt['pillar.get']('site:salt:bootstrap:site_repo') | json }}
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

# nginx -t before any restart: a bad site (or tokens.conf) fails the highstate and the
# running nginx keeps serving its old configuration
provisioning-pxe-cmd-run-nginx-test:
  cmd.run:
    - name: nginx -t -q
    - onchanges:
      - cmd: provisioning-pxe-cmd-run-sync
      - file: provisioning-pxe-file-managed-nginx-site
      - file: provisioning-pxe-file-symlink-nginx-site
      - file: provisioning-pxe-file-absent-nginx-default

provisioning-pxe-service-running-nginx:
  service.running:
    - name: {{ mapdata.nginx.service }}
    - enable: true
    - require:
      - cmd: provisioning-pxe-cmd-run-nginx-test
    - watch:
      - cmd: provisioning-pxe-cmd-run-sync  # pxe/nginx/tokens.conf, included by the site
      - file: provisioning-pxe-file-managed-nginx-site
      - file: provisioning-pxe-file-symlink-nginx-site
      - file: provisioning-pxe-file-absent-nginx-default
