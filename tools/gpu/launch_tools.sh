# Sourced by tools/gpu/bench and shim_cost.sh: PY and CUPTI (cupti_env.sh)
# and CUDA; then builds build/empty_launch (the launch loop, once) and
# build/cupti_trace.so (the CUPTI tracer: the peer and the floor). Exits 1
# when a build fails.
. "$(dirname "${BASH_SOURCE[0]}")/cupti_env.sh"
CUDA=${CUDA_HOME:-/usr/local/cuda}
[ -x build/empty_launch ] || nvcc -O2 -o build/empty_launch tools/gpu/empty_launch.cu || exit 1
gcc -O2 -shared -fPIC -I"$CUDA/include" -I"$CUDA/extras/CUPTI/include" -o build/cupti_trace.so \
	tools/gpu/cupti_trace.c "$CUPTI" || exit 1
