{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- set interfaces = salt['pillar.get']('node:interfaces', {}) %}
{%- set ib = interfaces.get('ib') %}

network-netplan-pkg-installed:
  pkg.installed:
    - pkgs: {{ mapdata.packages | json }}

network-netplan-file-managed-apply-script:
  file.managed:
    - name: {{ mapdata.apply_script }}
    - source: salt://{{ tplroot }}/files/fleet-netplan-apply.sh.jinja
    - template: jinja
    - mode: '0755'
    - context:
        master: {{ salt['pillar.get']('site:salt:master_address') | json }}
        timeout: {{ mapdata.rollback_timeout }}
        file: {{ mapdata.netplan.file | json }}

# cloud-init must not rewrite the network configuration on a later boot
network-netplan-file-managed-cloud-init:
  file.managed:
    - name: /etc/cloud/cloud.cfg.d/99-fleet-network.cfg
    - makedirs: true
    - mode: '0644'
    - contents: 'network: {config: disabled}'

network-netplan-file-managed-config:
  file.managed:
    - name: {{ mapdata.netplan.file }}
    - source: salt://{{ tplroot }}/files/netplan.yaml.jinja
    - template: jinja
    - user: root
    - group: root
    # netplan refuses world-readable configuration
    - mode: '0600'
    - context:
        interfaces: {{ interfaces | json }}
        boot_nic_name: {{ mapdata.boot_nic_name | json }}
        ib_match: {{ mapdata.ib_match | json }}
        infiniband_mode: {{ mapdata.netplan.infiniband_mode | json }}
        dns_servers: {{ salt['pillar.get']('site:dns_servers', []) | json }}
        domain: {{ salt['pillar.get']('site:domain') | json }}
    # netplan generate in a scratch root: a bad file never reaches /etc/netplan
    - check_cmd: {{ mapdata.apply_script }} --check
    - require:
      - pkg: network-netplan-pkg-installed
      - file: network-netplan-file-managed-apply-script

{%- if not mapdata.container %}

# (not in a container: its interfaces belong to the container engine)
network-netplan-cmd-run-apply:
  cmd.run:
    - name: {{ mapdata.apply_script }} --apply
    - onchanges:
      - file: network-netplan-file-managed-config
{%- endif %}
{%- if ib and not mapdata.netplan.infiniband_mode %}

# netplan on this release cannot set the IPoIB mode: set it from udev
network-netplan-file-managed-ipoib-udev:
  file.managed:
    - name: /etc/udev/rules.d/70-fleet-ipoib-mode.rules
    - mode: '0644'
    - contents: 'ACTION=="add", SUBSYSTEM=="net", KERNEL=="{{ mapdata.ib_match }}", ATTR{mode}="{{ ib.ipoib_mode }}"'
{%- endif %}
