{%- set tplroot = tpldir.split('/')[0] %}
{%- from tplroot ~ '/map.jinja' import mapdata with context %}
{%- from 'lib/macros.jinja' import verify_unit %}
{#- The status collector (tools/fleet/status/service.py): a long-running service running
    `fleet status --collect` from the checkout; `fleet status` and the fleet page read its
    cache. Its intervals are fleet's own (fleet.status.service.INTERVALS); here only where
    it runs and how many BMCs it asks at once. `status.enabled` false (the lab's pillar: its
    master, and so its collector, runs on the host, and the head node has no fleet in its
    checkout) writes the unit but neither verifies nor starts it. #}
{%- set st = mapdata.status %}
{%- set fleet = mapdata.checkout ~ '/' ~ st.fleet %}
{%- set command = [fleet, 'status', '--collect', '-q', '-i', mapdata.checkout ~ '/inventory.yaml',
                   '--status-state-dir', st.dir, '--parallel', st.bmc_parallel | string,
                   '--secrets', mapdata.checkout ~ '/secrets'] %}
{%- set unit = st.unit_dir ~ '/fleet-status-collect.service' %}

provisioning-status-file-directory-cache:
  file.directory:
    - name: {{ st.dir }}
    - user: root
    - group: root
    - mode: '0755'
    - makedirs: true

provisioning-status-file-managed-service:
  file.managed:
    - name: {{ unit }}
    - source: salt://{{ tplroot }}/files/fleet-status-collect.service.jinja
    - template: jinja
    - user: root
    - group: root
    - mode: '0644'
    - context:
        command: {{ command | json }}
        fleet: {{ fleet | json }}
        checkout: {{ mapdata.checkout | json }}
        cache_dir: {{ st.dir | json }}

{%- if st.enabled %}

{{ verify_unit('provisioning-status-cmd-run-verify-unit', unit,
               ['file: provisioning-status-file-managed-service']) }}

provisioning-status-service-running-collector:
  service.running:
    - name: fleet-status-collect.service
    - enable: true
    - require:
      - cmd: provisioning-status-cmd-run-verify-unit
      - file: provisioning-status-file-directory-cache
    - watch:
      - file: provisioning-status-file-managed-service
{%- endif %}
