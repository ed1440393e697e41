{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- set minion = mapdata.salt_minion %}

{%- set own = salt['pillar.get']('node:salt', {}) %}
{%- if not own.get('minion_conf') or not own.get('minion_id') %}
{{- raise('base.minion: pillar node:salt is missing (make render)') }}
{%- endif %}
{#- The minion's config, the bytes the installer wrote (pillar node:salt, from
    fleet.render.bootstrap). Its id must be this minion's, and the id and the master (or
    each master of a failover list) are plain scalars of a host name or an address only
    (any other text could be read as something else, or add a key): checked here too, in
    case a pillar was edited by hand. #}
{%- set conf = own.minion_conf.contents | load_yaml %}
{%- set masters = conf.get('master') if conf.get('master') is sequence and conf.get('master') is not string else [conf.get('master')] %}
{%- for word in [conf.get('id')] + (masters or [none]) %}
{%-   if word is not string or not word or word | regex_search('[^A-Za-z0-9.:-]') %}
{{- raise('base.minion: ' ~ word | json ~ ' is not a minion id or master address') }}
{%-   endif %}
{%- endfor %}
{%- if conf.id != opts['id'] %}
{{- raise('base.minion: pillar node:salt is for ' ~ conf.id ~ ', not ' ~ opts['id']) }}
{%- endif %}
{#- master_finger pins the master's key: the inventory's site.salt.master_finger
    (recorded with `fleet keys finger`, never typed) is already in the file; else the
    fingerprint of the master key this minion already authenticated (key.finger_master)
    is appended, the way the bootstrap writes a recorded one: from then on no other
    master is accepted. #}
{%- set contents = own.minion_conf.contents %}
{%- if not salt['pillar.get']('site:salt:master_finger') %}
{%-   set finger = salt['key.finger_master']() %}
{%-   if finger %}
{%-     set contents = contents ~ 'master_finger: ' ~ (finger | yaml_squote) ~ '\n' %}
{%-   endif %}
{%- endif %}

base-minion-file-managed-conf:
  file.managed:
    - name: {{ own.minion_conf.path }}
    - contents: {{ contents | json }}
    - mode: '0644'
    - check_cmd: /usr/bin/python3 -c 'import sys, yaml; yaml.safe_load(open(sys.argv[1]))'

base-minion-file-managed-id:
  file.managed:
    - name: {{ own.minion_id.path }}
    - contents: {{ own.minion_id.contents | json }}
    - mode: '0644'

# Restart in the background once this run has returned: restarting in the foreground
# would kill the job that is applying it, and so would a fixed delay (the rest of a first
# highstate takes minutes). The shell's parent is the job's process: wait until it has
# sent its return and exited, then restart.
base-minion-cmd-run-restart:
  cmd.run:
    - name: >-
        job=$PPID; while kill -0 "$job" 2>/dev/null; do sleep 1; done;
        sleep 2; systemctl restart {{ minion.service }}
    - bg: true
    - onchanges:
      - file: base-minion-file-managed-conf
