{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- set admins = salt['pillar.get']('site:admins', []) %}

include:
  - .apt

{%- for admin in admins %}

base-admins-user-present-{{ admin.name }}:
  user.present:
    - name: {{ admin.name }}
    - shell: /bin/bash
    - createhome: true
    - password: '!'

base-admins-ssh-auth-manage-{{ admin.name }}:
  ssh_auth.manage:
    - user: {{ admin.name }}
    - ssh_keys: {{ admin.ssh_keys | json }}
    - require:
      - user: base-admins-user-present-{{ admin.name }}
{%- endfor %}

base-admins-file-managed-sudoers:
  file.managed:
    - name: {{ mapdata.sudoers_file }}
    - source: salt://{{ tplroot }}/files/sudoers.jinja
    - template: jinja
    - user: root
    - group: root
    - mode: '0440'
    - check_cmd: /usr/sbin/visudo -c -f
    - context:
        admins: {{ admins | json }}
    - require:
      - sls: base.apt

# the admins' way in: sshd listening (socket-activated on Ubuntu 24.04: ssh.socket)
base-admins-service-running-sshd:
  service.running:
    - name: {{ mapdata.ssh_unit }}
    - enable: true
    - require:
      - sls: base.apt
