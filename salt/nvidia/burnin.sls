{%- from 'lib/map.jinja' import mapdata with context %}
{%- from 'lib/macros.jinja' import pinned_tree %}
{%- set b = mapdata.burnin %}
{%- set tools = salt['pillar.get']('node:nvidia:burnin_tools', {}) %}
{%- set pinned = [] %}
{%- set packages = [] %}
{%- for name, t in tools | dictsort if t %}
{%-   do pinned.append(name) %}
{%-   for p in (b.build.get(name) or {}).get('packages', []) if p not in packages %}
{%-     do packages.append(p) %}
{%-   endfor %}
{%- endfor %}
# nvidia.burnin: the burn-in's GPU tools that no archive packages (gpu-burn's gpu_burn,
# nccl-tests' all_reduce_perf), each built from its pinned source (pillar
# node:nvidia:burnin_tools: the inventory's site.burnin_tools) with the archive's CUDA
# toolkit, after the driver, into its own directory per pin, `current` linked to it
# last; built once per pin. A tool whose pin is null: nothing here, and its burn-in
# check fails naming the inventory field (docs/discovery.md, Burn-in tools).
{%- if packages %}

nvidia-burnin-pkg-installed:
  pkg.installed:
    - pkgs: {{ packages | json }}
    - require:
      - pkg: {{ 'nvidia-p2p-pkg-installed-userspace' if mapdata.p2p.enabled else 'nvidia-driver-pkg-installed' }}
{%- endif %}
{%- for name in pinned %}
{%-   set t = tools[name] %}
{%-   set build = b.build.get(name) %}
{%-   if not build %}
{%-     set why = 'nvidia.burnin: ' ~ name ~ ' is pinned (site.burnin_tools), but this OS ('
                  ~ grains.get('osfinger', '') ~ ') has no build of it: its archive lacks a'
                  ~ ' package it needs (salt/nvidia/defaults.yaml burnin:build)' %}

nvidia-burnin-test-fail-without-changes-{{ name }}:
  test.fail_without_changes:
    - name: {{ why | json }}
{%-   else %}
{%-     set tree = t.dir ~ '/' ~ t.sha256 %}

{{ pinned_tree('nvidia-burnin', name, t, b.cache, tree, ['Makefile'], t.binary,
               'make -C ' ~ tree ~ '.new ' ~ build.make ~ ' && test -x ' ~ tree ~ '.new/' ~ t.binary,
               'built', ['pkg: nvidia-burnin-pkg-installed']) }}

nvidia-burnin-file-symlink-{{ name }}-current:
  file.symlink:
    - name: {{ t.dir }}/current
    - target: {{ tree }}
    - force: true
    - require:
      - cmd: nvidia-burnin-cmd-run-{{ name }}-built
{%-   endif %}
{%- endfor %}
