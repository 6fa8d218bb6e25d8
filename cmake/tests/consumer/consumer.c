// Pauses recording around one CUDA call through the installed control API header, as
// <asyncwatch/control.h> says: looked up with dlsym, so that it runs unchanged without asyncwatch.
#include <asyncwatch/control.h>
#include <dlfcn.h>
#include <stdio.h>

typedef __typeof__(asyncwatch_set_recording) SetRecording;  // the header's declaration
typedef int CudaFree(void*);

int main(void) {
  SetRecording* set_recording = (SetRecording*)dlsym(RTLD_DEFAULT, "asyncwatch_set_recording");
  void* cudart = dlopen("libcudart.so.13", RTLD_NOW);  // the simulator's, under asyncwatch run --sim
  CudaFree* cuda_free = cudart ? (CudaFree*)dlsym(cudart, "cudaFree") : NULL;
  if (cuda_free) cuda_free(NULL);
  if (!set_recording) {
    printf("asyncwatch is not loaded\n");
    return 0;
  }
  int was = set_recording(0);
  if (cuda_free) cuda_free(NULL);  // not recorded
  int paused = set_recording(1);
  printf("recording was %d, then %d\n", was, paused);
  return 0;
}
