// asyncwatch's control API, for programs that want to trace only part of their run (the training
// loop, not the warm-up) and for benchmarks that compare recording on and off inside one process.
//
// The library exports the function only when it is preloaded, so look it up at run time and the
// program runs unchanged without asyncwatch:
//
//   using SetRecording = int (*)(int);
//   auto set_recording = reinterpret_cast<SetRecording>(dlsym(RTLD_DEFAULT, "asyncwatch_set_recording"));
//   if (set_recording) set_recording(0);   // pause
//   ...
//   if (set_recording) set_recording(1);   // resume
//
// While paused, intercepted calls go straight to CUDA and are neither recorded nor counted as
// lost; the trace header keeps the number and total length of the pauses and the report says so.
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

// Pauses (on = 0) or resumes (on != 0) recording for the whole process. Returns the previous
// state: 1 recording, 0 paused. Safe from any thread; cheap (no CUDA call).
int asyncwatch_set_recording(int on);

#ifdef __cplusplus
}
#endif
