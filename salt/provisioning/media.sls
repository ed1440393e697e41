{%- set tplroot = tpldir.split('/')[0] %}
{%- from tplroot ~ '/map.jinja' import mapdata with context %}
{%- set media = mapdata.media %}
{%- if media.enabled %}
{#- site.install: the ISO's source and sha256; provisioning:media: where it, the kernel and
    the initrd lie under images_dir (served as /images/: iso_url, site.install.kernel and
    .initrd, which the rendered iPXE and GRUB configs load) #}
{%- set install = salt['pillar.get']('provisioning:install', {}) %}
{%- set files = salt['pillar.get']('provisioning:media', {}) %}
{%- for key in ['iso_source', 'iso_sha256'] if not install.get(key) %}
{{- raise('provisioning: pillar provisioning:install:' ~ key ~ ' is missing for ' ~ opts['id']) }}
{%- endfor %}
{%- for key in ['iso', 'kernel', 'initrd'] if not files.get(key) %}
{{- raise('provisioning: pillar provisioning:media:' ~ key ~ ' is missing for ' ~ opts['id']) }}
{%- endfor %}
{%- set iso = mapdata.images_dir ~ '/' ~ files.iso %}
{%- set kernel = mapdata.images_dir ~ '/' ~ files.kernel %}
{%- set initrd = mapdata.images_dir ~ '/' ~ files.initrd %}
{%- set source = install.iso_source if not install.iso_source.startswith('/') else 'file://' ~ install.iso_source %}
{#- what was unpacked from which ISO: a new ISO (sha256) or new paths unpack again #}
{%- set stamp = iso ~ '.unpacked' %}
{%- set stamp_text = install.iso_sha256 ~ ' ' ~ media.kernel_in_iso ~ ' ' ~ kernel ~ ' ' ~ media.initrd_in_iso ~ ' ' ~ initrd %}

provisioning-media-pkg-installed:
  pkg.installed:
    - pkgs: {{ media.packages | json }}

# Salt fetches the source and checks it against the sha256 before it writes anything: a
# mismatch fails this state and names both sums; a file already matching is neither
# fetched nor written again (it is hashed on each apply)
provisioning-media-file-managed-iso:
  file.managed:
    - name: {{ iso }}
    - source: {{ source | json }}
    - source_hash: sha256={{ install.iso_sha256 }}
    - user: root
    - group: root
    - mode: '0644'
    - makedirs: true
    - show_changes: false

# casper's kernel and initrd, unpacked next to their final names and renamed into place
# (a booting node reads the old or the new file, never half of one)
provisioning-media-cmd-run-unpack:
  cmd.run:
    - name: >-
        set -e;
        rm -f {{ kernel }}.new {{ initrd }}.new;
        mkdir -p {{ kernel.rsplit('/', 1)[0] }} {{ initrd.rsplit('/', 1)[0] }};
        {{ media.xorriso }} -abort_on FAILURE -return_with SORRY 32 -osirrox on -indev {{ iso }}
        -extract {{ media.kernel_in_iso }} {{ kernel }}.new
        -extract {{ media.initrd_in_iso }} {{ initrd }}.new;
        test -s {{ kernel }}.new; test -s {{ initrd }}.new;
        chmod 0644 {{ kernel }}.new {{ initrd }}.new;
        mv -f {{ kernel }}.new {{ kernel }}; mv -f {{ initrd }}.new {{ initrd }};
        echo '{{ stamp_text }}' > {{ stamp }}.new; mv -f {{ stamp }}.new {{ stamp }}
    - unless: >-
        test -s {{ kernel }} && test -s {{ initrd }} &&
        grep -qxF '{{ stamp_text }}' {{ stamp }}
    - require:
      - pkg: provisioning-media-pkg-installed
      - file: provisioning-media-file-managed-iso
{%- endif %}
