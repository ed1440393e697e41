{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- from tplroot ~ '/collector.jinja' import collector with context %}
# monitoring.slurm (the Slurm controller): node states per partition, jobs pending and
# running, scheduler cycle times, from sinfo, squeue and sdiag (fleet-slurm-metrics).
include:
  - .collectors
{{ collector('slurm', 'slurm', ['--bin', mapdata.collectors.slurm_bin], mapdata, tplroot) }}
