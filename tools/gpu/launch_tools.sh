# Sourced by tools/gpu/bench and shim_cost.sh: PY (the PyTorch venv's python
# unless set), CUPTI (the CUDA wheel's libcupti, exported as GPUPROBE_CUPTI
# for the loader and the shim) and CUDA; then builds build/empty_launch (the
# launch loop, once) and build/cupti_trace.so (the CUPTI tracer: the peer
# and the floor). Exits 1 when a build fails.
PY=${PY:-/opt/torch/.venv/bin/python3}
site=$($PY -c 'import site; print(site.getsitepackages()[0])')
CUPTI=$(ls "$site"/nvidia/cu13/lib/libcupti.so* | head -1)
export GPUPROBE_CUPTI=$CUPTI
CUDA=${CUDA_HOME:-/usr/local/cuda}
[ -x build/empty_launch ] || nvcc -O2 -o build/empty_launch tools/gpu/empty_launch.cu || exit 1
gcc -O2 -shared -fPIC -I"$CUDA/include" -I"$CUDA/extras/CUPTI/include" -o build/cupti_trace.so \
	tools/gpu/cupti_trace.c "$CUPTI" || exit 1
