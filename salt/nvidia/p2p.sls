{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- set p2p = mapdata.p2p %}
{%- from tplroot ~ '/names.jinja' import expand, branch with context %}
{%- if p2p.enabled %}
{#- The P2P fork replaces the kernel modules: the packaged modules must go first
    (the last installer wins), the userspace stays at the same branch. #}

nvidia-p2p-pkg-purged-packaged-modules:
  pkg.purged:
    - pkgs: {{ expand(p2p.remove) }}

nvidia-p2p-pkg-installed-build-deps:
  pkg.installed:
    - pkgs: {{ expand(p2p.build_deps) }}

nvidia-p2p-pkg-installed-userspace:
  pkg.installed:
    - pkgs: {{ expand(p2p.userspace) }}
    - hold: true
    - require:
      - pkg: nvidia-p2p-pkg-purged-packaged-modules

{%- if not p2p.sha256 %}

nvidia-p2p-test-fail-without-changes-source:
  test.fail_without_changes:
    - name: 'nvidia:lookup:p2p:sha256 is not set: the P2P module source must be pinned by checksum'
{%- else %}

nvidia-p2p-archive-extracted:
  archive.extracted:
    - name: {{ p2p.build_dir }}
    - source: {{ p2p.source }}
    - source_hash: sha256={{ p2p.sha256 }}
    - enforce_toplevel: false
    - options: --strip-components=1

nvidia-p2p-file-managed-build-script:
  file.managed:
    - name: {{ p2p.build_script }}
    - source: salt://{{ tplroot }}/files/fleet-nvidia-p2p-build.sh.jinja
    - template: jinja
    - mode: '0755'
    - context:
        build_dir: {{ p2p.build_dir | json }}
        sha256: {{ p2p.sha256 | json }}

# Rebuilt when the source changes or the running kernel has no P2P module yet.
nvidia-p2p-cmd-run-build:
  cmd.run:
    - name: {{ p2p.build_script }} build
    - unless: {{ p2p.build_script }} check
    - require:
      - pkg: nvidia-p2p-pkg-purged-packaged-modules
      - pkg: nvidia-p2p-pkg-installed-build-deps
      - pkg: nvidia-p2p-pkg-installed-userspace
      - archive: nvidia-p2p-archive-extracted
      - file: nvidia-p2p-file-managed-build-script
{%- endif %}
{%- endif %}
