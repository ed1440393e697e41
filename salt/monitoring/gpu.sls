{%- set tplroot = tpldir.split('/')[0] %}
{%- from 'lib/map.jinja' import mapdata with context %}
{%- from tplroot ~ '/collector.jinja' import collector with context %}
# monitoring.gpu (GPU nodes): nvidia-smi's query and the kernel's Xid messages as DCGM
# exporter's metric names (fleet-gpu-metrics), every site:monitoring:interval_s.
include:
  - .collectors
{{ collector('gpu', 'gpu', ['--nvidia-smi', mapdata.collectors.nvidia_smi], mapdata, tplroot) }}
