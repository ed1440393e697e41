{%- set tplroot = tpldir.split('/')[0] %}
{%- set hostname = salt['pillar.get']('node:hostname') %}

base-identity-file-managed-hostname:
  file.managed:
    - name: /etc/hostname
    - contents: {{ hostname | json }}
    - mode: '0644'

base-identity-cmd-run-hostname:
  cmd.run:
    - name: hostnamectl set-hostname {{ hostname | quote }}
    - unless: test "$(hostname)" = {{ hostname | quote }}
    - require:
      - file: base-identity-file-managed-hostname

base-identity-file-managed-hosts:
  file.managed:
    - name: /etc/hosts
    - source: salt://{{ tplroot }}/files/hosts.jinja
    - template: jinja
    - mode: '0644'
    - context:
        fqdn: {{ salt['pillar.get']('node:fqdn') | json }}
        hostname: {{ hostname | json }}
