{%- set tplroot = tpldir.split('/')[0] %}
{%- from tplroot ~ '/map.jinja' import mapdata with context %}
{#- The fleet page (tools/fleet/page): a oneshot service running `fleet page` from the
    checkout into the page directory, a timer running it every page.interval_s; nginx
    serves the directory (provisioning.pxe's site, files/pxe-nginx.conf.jinja). The
    service is skipped, not failed, where the checkout has no fleet (ConditionPathExists). #}
{%- set page = mapdata.page %}
{%- set fleet = mapdata.checkout ~ '/' ~ page.fleet %}
{%- set command = [fleet, 'page', '-q', '-i', mapdata.checkout ~ '/inventory.yaml', '--out', page.dir] %}

provisioning-page-file-directory-out:
  file.directory:
    - name: {{ page.dir }}
    - user: root
    - group: root
    - mode: '0755'
    - makedirs: true

provisioning-page-file-managed-service:
  file.managed:
    - name: {{ page.unit_dir }}/fleet-page.service
    - source: salt://{{ tplroot }}/files/fleet-page.service.jinja
    - template: jinja
    - user: root
    - group: root
    - mode: '0644'
    - context:
        command: {{ command | json }}
        fleet: {{ fleet | json }}
        checkout: {{ mapdata.checkout | json }}
        out: {{ page.dir | json }}
        timeout_s: {{ page.timeout_s }}

provisioning-page-file-managed-timer:
  file.managed:
    - name: {{ page.unit_dir }}/fleet-page.timer
    - source: salt://{{ tplroot }}/files/fleet-page.timer.jinja
    - template: jinja
    - user: root
    - group: root
    - mode: '0644'
    - context:
        interval_s: {{ page.interval_s }}

provisioning-page-service-running-timer:
  service.running:
    - name: fleet-page.timer
    - enable: true
    - require:
      - file: provisioning-page-file-directory-out
      - file: provisioning-page-file-managed-service
    - watch:
      - file: provisioning-page-file-managed-timer
