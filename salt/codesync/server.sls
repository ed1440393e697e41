{%- from 'lib/map.jinja' import mapdata with context %}
{%- from 'lib/macros.jinja' import verify_unit %}
{%- set s = mapdata.server %}
{%- set c = salt['pillar.get']('compute:codesync') %}
{%- set nft_file = s.nft_dir ~ '/codesync.nft' %}
{%- set nfs = s.nfs %}
{%- set snapshot = c.job_copy == 'snapshot' %}
{%- if snapshot and c.fs != 'btrfs' %}
{{- raise('codesync.server: compute:codesync:job_copy snapshot needs fs btrfs, not ' ~ c.fs | json) }}
{%- endif %}
{#- defence in depth (fleet validate refuses these first): device and fs reach commands #}
{%- if c.device and not c.device | regex_match('^(/dev/disk/by-(id|path|partuuid|uuid)/[A-Za-z0-9:._+-]+)$') %}
{{- raise('codesync.server: compute:codesync:device ' ~ c.device | json ~ ' is not a /dev/disk/by-*/ name') }}
{%- endif %}
{%- if c.fs and c.fs not in s.mkfs %}
{{- raise('codesync.server: compute:codesync:fs ' ~ c.fs | json ~ ' is not one of ' ~ s.mkfs | list | join(', ')) }}
{%- endif %}
{%- set units = [s.firewall_unit, s.unit, s.prune_unit ~ '.service', s.prune_unit ~ '.timer']
      | map('regex_replace', '^', s.unit_dir ~ '/') | join(' ') %}
# codesync.server: the monorepo export ({{ c.export }}: xx/ the main checkout,
# {{ s.caches }}/<job>/ per-job copies) and the rsync daemon module {{ s.module }} on port
# {{ c.port }} that submitters push to (hosts allow and nftables: the cluster networks
# only); a daily timer prunes per-job copies older than {{ c.prune_days }} days. The
# kernel NFS server exports it read-only, root squashed, NFSv4 only, to the cluster
# networks (port {{ c.nfs_port }}, opened in the same firewall table as rsync's). In a
# container (the lab: the host's kernel has no nfsd) the exports and nfs.conf are
# rendered as on a site, and the server's start is a named stand-in.
# The export's file system (compute.codesync.fs) is checked on every apply: job_copy
# hardlink relies on it (docs/operations.md, The code sync); a named blank device is
# formatted (never one on which blkid finds any signature) and mounted at the export.
# job_copy snapshot: xx/ is a btrfs subvolume, and the daemon's pre-xfer exec makes each
# push's branches/caches/<job>/xx a snapshot of it, as the module's user.

codesync-server-pkg-installed:
  pkg.installed:
    - pkgs: {{ (s.packages + ([s.fs_packages[c.fs]] if c.device or snapshot else [])) | json }}

codesync-server-user-present:
  user.present:
    - name: {{ s.user }}
    - system: true
    - shell: /usr/sbin/nologin
    - home: {{ c.export }}
    - createhome: false

{%- if c.device and not mapdata.container %}

# formats only a device on which blkid finds nothing: blkid -p exits 2 for "no
# signature" and 0 for a file system, RAID member or partition table, other codes for
# an ambivalent or failed probe; mkfs is never given -f
codesync-server-cmd-run-mkfs-export:
  cmd.run:
    - name: {{ s.mkfs[c.fs] }} {{ c.device }}
    - onlyif: test -b {{ c.device }} && { {{ s.blkid }} -p {{ c.device }} >/dev/null; test $? -eq 2; }
    - require:
      - pkg: codesync-server-pkg-installed

codesync-server-mount-mounted-export:
  mount.mounted:
    - name: {{ c.export }}
    - device: {{ c.device }}
    - fstype: {{ c.fs }}
    - opts: {{ s.mount_opts | json }}
    - mkmnt: true
    - persist: true
    - require:
      - cmd: codesync-server-cmd-run-mkfs-export
{%- endif %}

{%- for dir in ['', '/xx', '/branches', '/' ~ s.caches] %}

codesync-server-file-directory-export{{ dir | replace('/', '-') }}:
  file.directory:
    - name: {{ c.export }}{{ dir }}
    - user: {{ s.user }}
    - group: {{ s.user }}
    - mode: '0755'
    - makedirs: true
    - require:
      - user: codesync-server-user-present
{%- if c.device and not mapdata.container %}
      - mount: codesync-server-mount-mounted-export
{%- endif %}
{%- if dir == '/xx' and snapshot and not mapdata.container %}
      - cmd: codesync-server-cmd-run-subvolume-xx
{%- endif %}
{%- endfor %}
{%- if snapshot and not mapdata.container %}

# xx/ as a btrfs subvolume (what each per-job snapshot copies), made once on the checked
# btrfs; an xx/ that exists as a plain directory is never moved or removed: the apply fails
codesync-server-cmd-run-subvolume-xx:
  cmd.run:
    - name: >-
        if test -e {{ c.export }}/xx; then echo "codesync.server: {{ c.export }}/xx exists
        but is not a btrfs subvolume (job_copy snapshot needs one): move it aside, then
        apply again (the next push of the main checkout fills the new one)" >&2; exit 1; fi;
        {{ s.btrfs }} subvolume create {{ c.export }}/xx
    - unless: {{ s.btrfs }} subvolume show {{ c.export }}/xx
    - require:
      - pkg: codesync-server-pkg-installed
      - cmd: codesync-server-cmd-run-export-fs
{%- endif %}
{%- if snapshot %}

codesync-server-file-managed-snapshot-hook:
  file.managed:
    - name: {{ s.snapshot_hook }}
    - source: salt://codesync/files/snapshot-hook.sh
    - makedirs: true
    - user: root
    - group: root
    - mode: '0755'
{%- endif %}
{%- if c.fs and not mapdata.container %}

codesync-server-cmd-run-export-fs:
  cmd.run:
    - name: >-
        echo "codesync.server: {{ c.export }} is on $({{ s.findmnt }} -n -o FSTYPE --target
        {{ c.export }}), but compute.codesync.fs is {{ c.fs }}: mount a file system of type
        {{ c.fs }} there (or name a blank disk in compute.codesync.device)" >&2; exit 1
    - unless: test "$({{ s.findmnt }} -n -o FSTYPE --target {{ c.export }})" = {{ c.fs }}
    - require:
      - file: codesync-server-file-directory-export
{%- endif %}
{%- if c.fs and mapdata.container %}

# stand-in: the lab's export is its bind mount of a directory of the host
codesync-server-test-show-notification-fs-standin:
  test.show_notification:
    - text: >-
        codesync.server: stand-in: {{ c.export }} is not checked to be {{ c.fs }}
        {%- if c.device %} and {{ c.device }} is not formatted or mounted{% endif %} here
        (a container: the export is a bind mount of a directory of the host)
{%- endif %}

codesync-server-file-managed-conf:
  file.managed:
    - name: {{ s.conf }}
    - source: salt://codesync/files/rsyncd.conf.jinja
    - template: jinja
    - makedirs: true
    - mode: '0644'
    - context:
        sync: {{ c | json }}
        allow: {{ salt['pillar.get']('compute:allow') | json }}
        module: {{ s.module | json }}
        user: {{ s.user | json }}
        refuse: {{ (s.refuse + ([] if c.job_copy == 'hardlink' else ['link-dest'])) | json }}
        pre_xfer: {{ ([s.snapshot_hook, s.user, s.caches] if snapshot else []) | json }}

codesync-server-file-managed-nft:
  file.managed:
    - name: {{ nft_file }}
    - source: salt://compute/files/firewall.nft.jinja
    - template: jinja
    - makedirs: true
    - mode: '0644'
    - context:
        table: fleet_codesync
        ports: {{ [c.port, c.nfs_port] | json }}
        allow: {{ salt['pillar.get']('compute:allow') | json }}
    - check_cmd: {{ s.nft }} -c -f
    - require:
      - pkg: codesync-server-pkg-installed

{%- for unit, source, context in [
      (s.firewall_unit, 'salt://compute/files/firewall.service.jinja',
       {'what': 'the code sync rsync and NFS ports', 'table': 'fleet_codesync', 'nft': s.nft,
        'file': nft_file, 'before': s.unit}),
      (s.unit, 'salt://codesync/files/rsyncd.service.jinja',
       {'rsync': s.rsync, 'conf': s.conf, 'firewall_unit': s.firewall_unit}),
      (s.prune_unit ~ '.service', 'salt://codesync/files/prune.service.jinja',
       {'caches': c.export ~ '/' ~ s.caches, 'days': c.prune_days, 'user': s.user}),
      (s.prune_unit ~ '.timer', 'salt://codesync/files/prune.timer.jinja', {})] %}

codesync-server-file-managed-unit-{{ unit }}:
  file.managed:
    - name: {{ s.unit_dir }}/{{ unit }}
    - source: {{ source }}
    - template: jinja
    - mode: '0644'
    - context: {{ context | json }}
{%- endfor %}

{{ verify_unit('codesync-server-cmd-run-verify-units', units,
               ['file: codesync-server-file-managed-unit-' ~ s.firewall_unit,
                'file: codesync-server-file-managed-unit-' ~ s.unit,
                'file: codesync-server-file-managed-unit-' ~ s.prune_unit ~ '.service',
                'file: codesync-server-file-managed-unit-' ~ s.prune_unit ~ '.timer',
                'pkg: codesync-server-pkg-installed',
                'user: codesync-server-user-present']) }}

codesync-server-service-running-firewall:
  service.running:
    - name: {{ s.firewall_unit }}
    - enable: true
    - require:
      - cmd: codesync-server-cmd-run-verify-units
    - watch:
      - file: codesync-server-file-managed-nft
      - file: codesync-server-file-managed-unit-{{ s.firewall_unit }}

codesync-server-service-running-rsyncd:
  service.running:
    - name: {{ s.unit }}
    - enable: true
    - require:
      - cmd: codesync-server-cmd-run-verify-units
      - service: codesync-server-service-running-firewall
      - file: codesync-server-file-directory-export-{{ s.caches | replace('/', '-') }}
{%- if c.fs and not mapdata.container %}
      - cmd: codesync-server-cmd-run-export-fs
{%- endif %}
    - watch:
      - file: codesync-server-file-managed-conf
      - file: codesync-server-file-managed-unit-{{ s.unit }}
{%- if snapshot %}
      - file: codesync-server-file-managed-snapshot-hook
{%- endif %}

codesync-server-service-running-prune-timer:
  service.running:
    - name: {{ s.prune_unit }}.timer
    - enable: true
    - require:
      - cmd: codesync-server-cmd-run-verify-units
    - watch:
      - file: codesync-server-file-managed-unit-{{ s.prune_unit }}.service
      - file: codesync-server-file-managed-unit-{{ s.prune_unit }}.timer

codesync-server-file-managed-exports:
  file.managed:
    - name: {{ nfs.exports }}
    - source: salt://codesync/files/exports.jinja
    - template: jinja
    - mode: '0644'
    - context:
        export: {{ c.export | json }}
        allow: {{ salt['pillar.get']('compute:allow') | json }}
        options: {{ nfs.options | json }}
    - require:
      - pkg: codesync-server-pkg-installed
      - file: codesync-server-file-directory-export

codesync-server-file-managed-nfs-conf:
  file.managed:
    - name: {{ nfs.conf }}
    - source: salt://codesync/files/nfs.conf.jinja
    - template: jinja
    - makedirs: true
    - mode: '0644'
    - context:
        threads: {{ nfs.threads }}
    - require:
      - pkg: codesync-server-pkg-installed

{%- for unit in nfs.masked %}

# NFSv3's helpers: nothing of NFSv4 uses them, and rpcbind would answer anyone on 111
codesync-server-service-masked-{{ unit }}:
  service.masked:
    - name: {{ unit }}
    - require:
      - pkg: codesync-server-pkg-installed
{%- endfor %}

{%- if mapdata.container %}

# stand-in: the container's kernel (the host's) has no nfsd, so nfs-server cannot start;
# the lab's workers bind-mount the export instead (codesync.client). Said on every apply.
codesync-server-test-show-notification-nfs-standin:
  test.show_notification:
    - text: >-
        codesync.server: stand-in: {{ nfs.unit }} is not started in a container (the
        host's kernel has no nfsd); {{ nfs.exports }} and {{ nfs.conf }} are rendered as
        on a site, and the workers bind-mount {{ c.export }}
    - require:
      - file: codesync-server-file-managed-exports
      - file: codesync-server-file-managed-nfs-conf
{%- else %}

codesync-server-service-running-nfs:
  service.running:
    - name: {{ nfs.unit }}
    - enable: true
    - require:
      - service: codesync-server-service-running-firewall
{%- for unit in nfs.masked %}
      - service: codesync-server-service-masked-{{ unit }}
{%- endfor %}
      - file: codesync-server-file-managed-exports
    - watch:
      - file: codesync-server-file-managed-nfs-conf

# a changed export list is re-read in place: a restart would put the clients through
# NFSv4's grace period
codesync-server-cmd-run-exportfs:
  cmd.run:
    - name: {{ nfs.exportfs }} -ra
    - onchanges:
      - file: codesync-server-file-managed-exports
    - require:
      - service: codesync-server-service-running-nfs
{%- endif %}
