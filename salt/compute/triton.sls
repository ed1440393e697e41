{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- from 'lib/macros.jinja' import verify_unit %}
{%- set t = mapdata.triton %}
{%- set c = salt['pillar.get']('compute:triton') %}
{%- set address = salt['pillar.get']('node:monitoring:address') %}
# compute.triton: Triton Inference Server for miniray's tasks: explicit model control,
# the model repository in {{ t.model_repository }}, HTTP and gRPC on 127.0.0.1 only,
# metrics on the node's management address for Prometheus.
{%- if c.mode == 'container' %}
{%- set k = t.container %}
# the NGC image under podman, named tritonserver: miniray's cleanup_triton() finds it with
# `docker ps`/`docker top` (podman-docker's docker). The image is pinned by digest and
# imported by the operator (NGC cannot be reached from the site); GPUs through the CDI spec
# of NVIDIA's container toolkit (not in Ubuntu's archive: an operator install too).

compute-triton-pkg-installed-container:
  pkg.installed:
    - pkgs: {{ k.packages | json }}

compute-triton-cmd-run-image-imported:
  cmd.run:
    - name: >-
        echo 'compute.triton: image {{ c.image }} is not imported: load the operator's copy
        of it (podman load -i FILE; docs/operations.md, Triton)' >&2; exit 1
    - unless: podman image exists {{ c.image }}
    - require:
      - pkg: compute-triton-pkg-installed-container

compute-triton-cmd-run-cdi-spec:
  cmd.run:
    - name: >-
        echo 'compute.triton: no CDI spec {{ k.cdi_spec }} for the GPUs: nvidia-ctk cdi generate
        --output={{ k.cdi_spec }} (NVIDIA container toolkit; docs/operations.md, Triton)' >&2;
        exit 1
    - unless: test -s {{ k.cdi_spec }}

compute-triton-file-managed-unit:
  file.managed:
    - name: {{ t.unit_dir }}/{{ t.unit }}
    - source: salt://{{ tplroot }}/files/tritonserver-container.service.jinja
    - template: jinja
    - mode: '0644'
    - context:
        image: {{ c.image | json }}
        name: {{ k.name | json }}
        podman: {{ k.podman | json }}
        repository: {{ t.model_repository | json }}
        ports: {{ c.ports | json }}
        metrics_address: {{ address | json }}

{{ verify_unit('compute-triton-cmd-run-verify-unit', t.unit_dir ~ '/' ~ t.unit,
               ['file: compute-triton-file-managed-unit',
                'pkg: compute-triton-pkg-installed-container']) }}

compute-triton-service-running:
  service.running:
    - name: {{ t.unit }}
    - enable: true
    - require:
      - cmd: compute-triton-cmd-run-image-imported
      - cmd: compute-triton-cmd-run-cdi-spec
      - cmd: compute-triton-cmd-run-verify-unit
    - watch:
      - file: compute-triton-file-managed-unit
{%- elif c.mode != 'wheel' %}

compute-triton-test-fail-without-changes-mode:
  test.fail_without_changes:
    - name: 'compute.triton: mode {{ c.mode }} runs no server; the role is not for this node'
{%- else %}
{%- set home = t.root ~ '/' ~ c.artifact.sha256 %}
{%- set server = home ~ '/' ~ t.server %}

compute-triton-pkg-installed:
  pkg.installed:
    - pkgs: {{ t.packages | json }}

compute-triton-user-present:
  user.present:
    - name: {{ t.user }}
    - system: true
    - shell: /usr/sbin/nologin
    - home: /nonexistent
    - createhome: false

compute-triton-file-managed-wheel:
  file.managed:
    - name: {{ t.cache }}/{{ c.artifact.sha256 }}.whl
    - source: {{ c.artifact.source }}
    - source_hash: sha256={{ c.artifact.sha256 }}
    - makedirs: true
    - mode: '0644'

compute-triton-archive-extracted:
  archive.extracted:
    - name: {{ home }}
    - source: {{ t.cache }}/{{ c.artifact.sha256 }}.whl
    - source_hash: sha256={{ c.artifact.sha256 }}
    - archive_format: zip
    - enforce_toplevel: false
    - if_missing: {{ server }}/bin/tritonserver
    - require:
      - file: compute-triton-file-managed-wheel

# the python backend runs the stub built for the OS's Python (what PyTriton copies at
# run time); zip extraction keeps no mode bits
compute-triton-cmd-run-stub:
  cmd.run:
    - name: >-
        install -m 0755 {{ server }}/python_backend_stubs/{{ t.python }}/triton_python_backend_stub
        {{ server }}/backends/python/triton_python_backend_stub
        && chmod 0755 {{ server }}/bin/tritonserver
    - creates: {{ server }}/backends/python/triton_python_backend_stub
    - require:
      - archive: compute-triton-archive-extracted

compute-triton-file-managed-unit:
  file.managed:
    - name: {{ t.unit_dir }}/{{ t.unit }}
    - source: salt://{{ tplroot }}/files/tritonserver.service.jinja
    - template: jinja
    - mode: '0644'
    - context:
        server: {{ server | json }}
        user: {{ t.user | json }}
        repository: {{ t.model_repository | json }}
        ports: {{ c.ports | json }}
        metrics_address: {{ address | json }}

{{ verify_unit('compute-triton-cmd-run-verify-unit', t.unit_dir ~ '/' ~ t.unit,
               ['file: compute-triton-file-managed-unit',
                'cmd: compute-triton-cmd-run-stub',
                'user: compute-triton-user-present']) }}

compute-triton-service-running:
  service.running:
    - name: {{ t.unit }}
    - enable: true
    - require:
      - pkg: compute-triton-pkg-installed
      - cmd: compute-triton-cmd-run-verify-unit
    - watch:
      - cmd: compute-triton-cmd-run-stub
      - file: compute-triton-file-managed-unit
{%- endif %}
