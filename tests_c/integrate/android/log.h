/* Stand-in for the NDK's <android/log.h>, only so llama.rn's / whisper.rn's jni.cpp compile and
 * link on Linux in scripts/test-integrate.sh: the declarations these files use, nothing more.
 * Never part of an app build. */
#pragma once
#ifdef __cplusplus
extern "C" {
#endif
typedef enum android_LogPriority {
  ANDROID_LOG_UNKNOWN = 0, ANDROID_LOG_DEFAULT, ANDROID_LOG_VERBOSE, ANDROID_LOG_DEBUG,
  ANDROID_LOG_INFO, ANDROID_LOG_WARN, ANDROID_LOG_ERROR, ANDROID_LOG_FATAL, ANDROID_LOG_SILENT
} android_LogPriority;
int __android_log_print(int prio, const char *tag, const char *fmt, ...);
#ifdef __cplusplus
}
#endif
