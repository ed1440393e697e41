{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{#- pillar node:infiniband:subnet_manager (not rendered yet): run opensm on this host #}
{%- set subnet_manager = salt['pillar.get']('node:infiniband:subnet_manager', false) %}

infiniband-rdma-pkg-installed:
  pkg.installed:
    - pkgs: {{ mapdata.packages | json }}

infiniband-rdma-file-managed-modules-load:
  file.managed:
    - name: {{ mapdata.modules_load_file }}
    - mode: '0644'
    - contents: |
        # Managed by Salt (infiniband.rdma). Do not edit.
{%- for m in mapdata.modules %}
        {{ m }}
{%- endfor %}

{%- if subnet_manager %}

infiniband-rdma-pkg-installed-opensm:
  pkg.installed:
    - name: {{ mapdata.opensm_package }}
    - require:
      - pkg: infiniband-rdma-pkg-installed

infiniband-rdma-service-running-opensm:
  service.running:
    - name: {{ mapdata.opensm_service }}
    - enable: true
    - require:
      - pkg: infiniband-rdma-pkg-installed-opensm
{%- else %}

infiniband-rdma-pkg-removed-opensm:
  pkg.removed:
    - name: {{ mapdata.opensm_package }}
{%- endif %}
{%- if mapdata.hardware %}
{%- for m in mapdata.modules %}

infiniband-rdma-kmod-present-{{ m }}:
  kmod.present:
    - name: {{ m }}
    - persist: false
    - require:
      - pkg: infiniband-rdma-pkg-installed
{%- endfor %}

# Hardware only: the HCA port is up, at full rate, with a subnet manager answering.
infiniband-rdma-cmd-run-ibstat:
  cmd.run:
    - name: >-
        out=$(ibstat);
        if echo "$out" | grep -q 'State: Active' && echo "$out" | grep -q 'Physical state: LinkUp'
        && echo "$out" | grep -Eq 'SM lid: [1-9]'; then echo "changed=no comment='IB port active'";
        else echo "$out" >&2; exit 1; fi
    - stateful: true
    - require:
{%- for m in mapdata.modules %}
      - kmod: infiniband-rdma-kmod-present-{{ m }}
{%- endfor %}
{%- endif %}
