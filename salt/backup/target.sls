{%- from 'lib/map.jinja' import mapdata with context %}
{#- backup.target (derived by fleet.inventory.roles: the storage server of an sftp
    site.backup destination): the master's backup login. Its key (the secrets store's
    backup/ssh_ed25519.pub, pillar backup_login:key) is authorized with the options
    fleet.backupsftp gives (node:backup_target:options): sftp only, from the masters'
    addresses only; the repository's directory is the login's alone (docs/operations.md,
    Backup and restore). #}
{%- set t = salt['pillar.get']('node:backup_target', {}) %}
{%- set key = salt['pillar.get']('backup_login:key', '') %}
{%- if not t.get('user') or not t.get('path') or not t.get('options') %}
{{- raise('backup.target: pillar node:backup_target is missing for ' ~ opts['id'] ~ ' (make render)') }}
{%- endif %}
{%- if not key | regex_match('^(ssh-ed25519 [A-Za-z0-9+/]{68} [A-Za-z0-9._@-]{1,64})$') %}
{{- raise('backup.target: pillar backup_login:key is not one ssh-ed25519 key line (fleet secrets init on the master makes it)') }}
{%- endif %}
{%- set enc, body, comment = key.split(' ') %}

backup-target-pkg-installed:
  pkg.installed:
    - name: {{ mapdata.package }}

backup-target-user-present:
  user.present:
    - name: {{ t.user | json }}
    - system: true
    - home: {{ mapdata.home | json }}
    - createhome: true
    - shell: {{ mapdata.shell | json }}
    - usergroup: true

backup-target-file-directory-repository:
  file.directory:
    - name: {{ t.path | json }}
    - user: {{ t.user | json }}
    - group: {{ t.user | json }}
    - mode: '0700'
    - makedirs: true
    - require:
      - user: backup-target-user-present

backup-target-ssh_auth-present:
  ssh_auth.present:
    - name: {{ body | json }}
    - user: {{ t.user | json }}
    - enc: {{ enc | json }}
    - comment: {{ comment | json }}
    - options: {{ t.options | json }}
    - require:
      - user: backup-target-user-present
      - pkg: backup-target-pkg-installed
