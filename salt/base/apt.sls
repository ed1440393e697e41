{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- set apt = mapdata.apt %}

base-apt-file-managed-sources:
  file.managed:
    - name: {{ apt.sources_file }}
    - source: salt://{{ tplroot }}/files/fleet.sources.jinja
    - template: jinja
    - user: root
    - group: root
    - mode: '0644'
    - context:
        apt: {{ apt | json }}
        mirror: {{ salt['pillar.get']('node:apt:mirror') | json }}
        security_mirror: {{ salt['pillar.get']('node:apt:security_mirror') | json }}
        codename: {{ grains['oscodename'] | json }}

base-apt-file-managed-legacy-list:
  file.managed:
    - name: {{ apt.legacy_list }}
    - contents: '# managed by Salt: sources are in {{ apt.sources_file }}'
    - mode: '0644'
    - require:
      - file: base-apt-file-managed-sources

{%- for path in apt.distro_sources %}

base-apt-file-absent-distro-{{ loop.index }}:
  file.absent:
    - name: {{ path }}
    - require:
      - file: base-apt-file-managed-sources
{%- endfor %}

# Salt's own repository and pin: the bytes the installer wrote (pillar site:salt:bootstrap,
# from fleet.render.bootstrap), so a highstate after an install changes neither.
{%- set boot = salt['pillar.get']('site:salt:bootstrap') %}
{%- if not boot %}
{{- raise('base.apt: pillar site:salt:bootstrap is missing (make render)') }}
{%- endif %}

base-apt-file-managed-salt-repo:
  file.managed:
    - name: {{ boot.sources.path }}
    - mode: '0644'
    - contents: {{ (boot.sources.contents if apt.salt_repo.enabled else boot.sources.disabled) | json }}

base-apt-file-managed-salt-pin:
  file.managed:
    - name: {{ boot.pin.path }}
    - mode: '0644'
    - contents: {{ boot.pin.contents | json }}

{#- The site package repository (site.apt.repo, docs/repo.md): what the site pins and
    holds, signed by the secrets store's key (trusted for this source only) and preferred
    over the archive; the provisioning host reads its own directory. #}
{%- set repo = boot.site_repo %}
{%- if repo %}
{%- set local = grains['id'] == salt['pillar.get']('site:provisioning:host') %}

base-apt-file-managed-site-repo-key:
  file.managed:
    - name: {{ repo.keyring }}
    - mode: '0644'
    - makedirs: true
    - contents_pillar: site_repo:key

base-apt-file-managed-site-repo:
  file.managed:
    - name: {{ repo.sources.path }}
    - mode: '0644'
    - contents: {{ (repo.sources.local if local else repo.sources.contents).replace('{codename}', grains['oscodename']) | json }}
    - require:
      - file: base-apt-file-managed-site-repo-key

base-apt-file-managed-site-repo-pin:
  file.managed:
    - name: {{ repo.pin.path }}
    - mode: '0644'
    - contents: {{ repo.pin.contents | json }}
{%- endif %}

base-apt-cmd-run-update:
  cmd.run:
    - name: apt-get update -q
    - onchanges:
      - file: base-apt-file-managed-sources
      - file: base-apt-file-managed-legacy-list
      - file: base-apt-file-managed-salt-repo
      - file: base-apt-file-managed-salt-pin
{%- if repo %}
      - file: base-apt-file-managed-site-repo-key
      - file: base-apt-file-managed-site-repo
      - file: base-apt-file-managed-site-repo-pin
{%- endif %}

# No unattended upgrade of the kernel, drivers, Slurm, munge or Salt.
base-apt-file-managed-unattended:
  file.managed:
    - name: /etc/apt/apt.conf.d/51fleet-unattended-upgrades
    - source: salt://{{ tplroot }}/files/unattended-upgrades.jinja
    - template: jinja
    - mode: '0644'
    - context:
        blacklist: {{ mapdata.unattended_blacklist | json }}

base-apt-pkg-installed:
  pkg.installed:
    - pkgs: {{ mapdata.packages | json }}
    - require:
      - cmd: base-apt-cmd-run-update

base-apt-pkg-held-kernel:
  pkg.installed:
    - pkgs: {{ mapdata.kernel_packages | json }}
    - hold: true
    - require:
      - cmd: base-apt-cmd-run-update
