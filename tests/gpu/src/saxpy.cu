// saxpy.cu - the GPU checklist's CUDA program: allocate, compute, copy back,
// check every element.  Prints the device name, PCI bus id and PASS/FAIL;
// exits non-zero on any CUDA error (with cudaGetErrorString) or a wrong result.
// Built with -cudart static, so only libcuda.so.1 (the driver) must be found.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(call)                                                                    \
	do {                                                                        \
		cudaError_t err_ = (call);                                          \
		if (err_ != cudaSuccess) {                                          \
			printf("saxpy: %s: CUDA error %d: %s\nFAIL\n", #call, (int)err_, \
			       cudaGetErrorString(err_));                           \
			fflush(stdout);                                             \
			return 3;                                                   \
		}                                                                   \
	} while (0)

__global__ void saxpy(int n, float a, const float *x, float *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : (1 << 24), count = 0, dev = 0, drv = 0, rtv = 0;
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	cudaDeviceProp prop;
	char bus[32];
	float *x, *y, *dx, *dy;
	long bad = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("saxpy: CUDA_VISIBLE_DEVICES=%s\n", cvd ? cvd : "(unset)");
	CK(cudaDriverGetVersion(&drv));
	CK(cudaRuntimeGetVersion(&rtv));
	printf("saxpy: driver API %d, runtime %d\n", drv, rtv);
	CK(cudaGetDeviceCount(&count));
	printf("saxpy: %d device(s)\n", count);
	for (int d = 0; d < count; d++) {
		CK(cudaGetDeviceProperties(&prop, d));
		CK(cudaDeviceGetPCIBusId(bus, sizeof(bus), d));
		printf("saxpy: device %d: %s, bus %s, sm_%d%d, %.1f GiB\n", d, prop.name, bus,
		       prop.major, prop.minor, (double)prop.totalGlobalMem / (1 << 30));
	}
	CK(cudaSetDevice(dev));
	x = (float *)malloc(sizeof(float) * (size_t)n);
	y = (float *)malloc(sizeof(float) * (size_t)n);
	if (x == NULL || y == NULL) {
		printf("saxpy: out of host memory\nFAIL\n");
		return 4;
	}
	for (int i = 0; i < n; i++) {
		x[i] = (float)(i % 1000);
		y[i] = 2.0f;
	}
	CK(cudaMalloc((void **)&dx, sizeof(float) * (size_t)n));
	CK(cudaMalloc((void **)&dy, sizeof(float) * (size_t)n));
	CK(cudaMemcpy(dx, x, sizeof(float) * (size_t)n, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dy, y, sizeof(float) * (size_t)n, cudaMemcpyHostToDevice));
	saxpy<<<(n + 255) / 256, 256>>>(n, 3.0f, dx, dy);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(y, dy, sizeof(float) * (size_t)n, cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		if (y[i] != 3.0f * (float)(i % 1000) + 2.0f)
			bad++;
	CK(cudaFree(dx));
	CK(cudaFree(dy));
	free(x);
	free(y);
	printf("saxpy: %d elements on device %d, %ld wrong\n%s\n", n, dev, bad,
	       bad == 0 ? "PASS" : "FAIL");
	return bad == 0 ? 0 : 5;
}
