{%- from 'lib/map.jinja' import mapdata with context %}
{%- set cl = mapdata.client %}
{%- set c = salt['pillar.get']('compute:codesync') %}
{%- set server = salt['pillar.get']('node:compute:codesync_host') %}
# codesync.client: the monorepo at {{ cl.mountpoint }} (NFS, read-only) and rsync, for
# workers and submitters. In a container (the lab: no NFS client in its kernel) the
# mount is the lab's bind mount of the export, which this state only requires.

# in a container only rsync: no NFS client to install for a bind mount
codesync-client-pkg-installed:
  pkg.installed:
    - pkgs: {{ (cl.container_packages if mapdata.container else cl.packages) | json }}

{%- if mapdata.container %}

codesync-client-cmd-run-bind-mount-present:
  cmd.run:
    - name: >-
        echo "codesync.client: {{ cl.mountpoint }} is missing: in a container it is a bind
        mount of the export, made by whoever runs the container" >&2; exit 1
    - unless: test -d {{ cl.mountpoint }}
{%- else %}

codesync-client-mount-mounted:
  mount.mounted:
    - name: {{ cl.mountpoint }}
    - device: {{ server }}:{{ c.export }}
    - fstype: nfs4
    - opts: {{ cl.options }}
    - mkmnt: true
    - persist: true
    - require:
      - pkg: codesync-client-pkg-installed
{%- endif %}
