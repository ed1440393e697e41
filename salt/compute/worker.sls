{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- from 'lib/macros.jinja' import pinned_tree %}
{%- set w = mapdata.worker %}
{%- set c = salt['pillar.get']('compute') %}
{%- set me = salt['pillar.get']('node:compute') %}
{%- set uv_home = w.uv_root ~ '/' ~ c.uv.sha256 %}
{%- set slots = grains.get('num_cpus', 1) | int %}
{%- set task_home = '/home/' ~ c.worker.task_user %}
# compute.worker: what a miniray worker needs on this node: Python, uv (the pinned wheel),
# miniray's pinned tree and its venv,
# the task user, one system user and group per CPU slot (proc000..proc{{ '%03d' % (slots - 1) }}),
# the worker's environment file, its Slurm job script and log rotation. The worker itself
# runs as a requeued Slurm job on the preemptible partition (docs/operations.md, Compute).

compute-worker-pkg-installed:
  pkg.installed:
    - pkgs: {{ w.packages | json }}

compute-worker-file-managed-uv-wheel:
  file.managed:
    - name: {{ w.cache }}/{{ c.uv.sha256 }}.whl
    - source: {{ c.uv.source }}
    - source_hash: sha256={{ c.uv.sha256 }}
    - makedirs: true
    - mode: '0644'

compute-worker-archive-extracted-uv:
  archive.extracted:
    - name: {{ uv_home }}
    - source: {{ w.cache }}/{{ c.uv.sha256 }}.whl
    - source_hash: sha256={{ c.uv.sha256 }}
    - archive_format: zip
    - enforce_toplevel: false
    - if_missing: {{ uv_home }}/uv-bin
    - require:
      - file: compute-worker-file-managed-uv-wheel

# the wheel's uv binary sits in <name>.data/scripts/; one stable path, mode set (zip
# extraction keeps no mode bits)
compute-worker-cmd-run-uv-binary:
  cmd.run:
    - name: >-
        install -m 0755 {{ uv_home }}/uv-*.data/scripts/uv {{ uv_home }}/uv-bin
    - creates: {{ uv_home }}/uv-bin
    - require:
      - archive: compute-worker-archive-extracted-uv

compute-worker-file-symlink-uv:
  file.symlink:
    - name: {{ w.uv_link }}
    - target: {{ uv_home }}/uv-bin
    - force: true
    - require:
      - cmd: compute-worker-cmd-run-uv-binary

# fleet-uv-warm PROJECT: fills the caller's uv cache with the wheels of PROJECT's uv.lock
# from the site's Python package cache (FLEET_PYCACHE_URL of worker.env), so that
# `uv sync --frozen --offline` then builds the job venv without the internet
compute-worker-file-managed-uv-warm:
  file.managed:
    - name: {{ w.uv_warm }}
    - source: salt://{{ tplroot }}/files/fleet-uv-warm.sh.jinja
    - template: jinja
    - mode: '0755'
    - context:
        uv: {{ w.uv_link | json }}
    - check_cmd: /bin/sh -n

{%- for group in w.extra_groups %}

compute-worker-group-present-{{ group }}:
  group.present:
    - name: {{ group }}
    - system: true
{%- endfor %}

compute-worker-user-present-task:
  user.present:
    - name: {{ c.worker.task_user }}
    - uid: {{ w.task_uid }}
    - usergroup: true
    - shell: /usr/sbin/nologin
    - home: {{ task_home }}
    - createhome: true

{%- for i in range(slots) %}
{%-   set name = w.proc_prefix ~ '%03d' % i %}

compute-worker-group-present-{{ name }}:
  group.present:
    - name: {{ name }}
    - gid: {{ w.proc_base + i }}
    - system: true

compute-worker-user-present-{{ name }}:
  user.present:
    - name: {{ name }}
    - uid: {{ w.proc_base + i }}
    - gid: {{ w.proc_base + i }}
    - system: true
    - shell: /usr/sbin/nologin
    - home: /nonexistent
    - createhome: false
    - require:
      - group: compute-worker-group-present-{{ name }}
{%- endfor %}

{#- the log directory (w.log_dir) is the slurm role's: the worker runs as a Slurm job #}
{%- for dir, owner, mode in [(w.env_dir, 'root', '0755'), (w.cache_dir, 'root', '0755')] %}

compute-worker-file-directory-{{ dir | replace('/', '-') | trim('-') }}:
  file.directory:
    - name: {{ dir }}
    - user: {{ owner }}
    - mode: '{{ mode }}'
    - makedirs: true
{%- endfor %}

compute-worker-file-managed-env:
  file.managed:
    - name: {{ w.env_dir }}/worker.env
    - source: salt://{{ tplroot }}/files/worker.env.jinja
    - template: jinja
    - mode: '0644'
    - context:
        redis_host: {{ me.redis_host | json }}
        queue: {{ c.worker.queue | json }}
        task_uid: {{ w.task_uid }}
        triton: {{ me.triton_server_enabled | json }}
        triton_port: {{ c.triton.ports.http }}
        pycache_url: {{ c.python_cache.url | json }}
        offline: {{ c.python_cache.offline | json }}
    - require:
      - file: compute-worker-file-directory-{{ w.env_dir | replace('/', '-') | trim('-') }}

# miniray's pinned tree (compute.miniray: a tar of it under miniray/, checked against its
# sha256), unpacked into its own directory per pin, its venv synced from the site's Python
# package cache with miniray's own lock (fleet-uv-warm, then uv sync --frozen offline; the
# project itself is not installed: worker.py runs from the tree, whose miniray/ is
# itself), and current linked to it last: a failed step leaves the previous one running
{%- set m = c.worker.miniray %}
{%- if not m %}{{ raise('compute.worker: pillar compute:worker:miniray is null (fleet validate refuses workers without it)') }}{% endif %}
{%- set tree = w.miniray_dir ~ '/' ~ m.sha256 %}

{{ pinned_tree('compute-worker', 'miniray', m, w.cache, tree, ['worker.py', 'uv.lock'], 'worker.py') }}

compute-worker-cmd-run-miniray-venv:
  cmd.run:
    - name: >-
        set -a && . {{ w.env_dir }}/worker.env && set +a &&
        {{ w.uv_warm }} {{ tree }} &&
        UV_PROJECT_ENVIRONMENT={{ tree }}/.venv {{ w.uv_link }} sync --frozen --offline
        --no-install-project --python {{ w.python }} --project {{ tree }} --no-progress
        --quiet && touch {{ tree }}/.venv/.fleet-synced
    - creates: {{ tree }}/.venv/.fleet-synced
    - require:
      - cmd: compute-worker-cmd-run-miniray-unpacked
      - file: compute-worker-file-symlink-uv
      - file: compute-worker-file-managed-uv-warm
      - file: compute-worker-file-managed-env
      - pkg: compute-worker-pkg-installed

compute-worker-file-symlink-miniray-current:
  file.symlink:
    - name: {{ w.miniray_dir }}/current
    - target: {{ tree }}
    - force: true
    - require:
      - cmd: compute-worker-cmd-run-miniray-venv

# the worker's Slurm job script; an operator submits it on this node (sbatch FILE)
compute-worker-file-managed-sbatch:
  file.managed:
    - name: {{ w.env_dir }}/worker.sbatch
    - source: salt://{{ tplroot }}/files/worker.sbatch.jinja
    - template: jinja
    - mode: '0644'
    - check_cmd: /bin/bash -n
    - context:
        node: {{ salt['pillar.get']('node:hostname') | json }}
        partition: {{ c.worker.partition | json }}
        job_name: {{ w.job_name | json }}
        log_dir: {{ w.log_dir | json }}
        env_file: {{ (w.env_dir ~ '/worker.env') | json }}
        miniray_dir: {{ (w.miniray_dir ~ '/current') | json }}
        task_home: {{ task_home | json }}
    - require:
      - file: compute-worker-file-managed-env
      - file: compute-worker-file-symlink-miniray-current

compute-worker-file-managed-logrotate:
  file.managed:
    - name: /etc/logrotate.d/miniray-worker
    - source: salt://{{ tplroot }}/files/logrotate.jinja
    - template: jinja
    - mode: '0644'
    - context:
        log_dir: {{ w.log_dir | json }}
    - check_cmd: /usr/sbin/logrotate -d
    - require:
      - pkg: compute-worker-pkg-installed
