{%- from 'lib/map.jinja' import mapdata with context %}
# The tools `fleet burnin run` calls on the node (stress-ng, memtester, fio, smartctl): its
# runner comes from the master with each call (fleet.burnin.remote), nothing else is kept.

base-burnin-pkg-installed:
  pkg.installed:
    - pkgs: {{ mapdata.burnin_packages | json }}
    - require:
      - cmd: base-apt-cmd-run-update
