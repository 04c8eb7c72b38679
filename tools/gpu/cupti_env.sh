# Sourced by the GPU scripts: PY (the PyTorch venv's python unless set) and
# CUPTI (the CUDA wheel's libcupti, exported as GPUPROBE_CUPTI for the
# loader and the shim).
PY=${PY:-/opt/torch/.venv/bin/python3}
site=$($PY -c 'import site; print(site.getsitepackages()[0])')
CUPTI=$(ls "$site"/nvidia/cu13/lib/libcupti.so* | head -1)
export GPUPROBE_CUPTI=$CUPTI
