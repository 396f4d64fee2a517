/* Link-time stand-ins for the NDK's liblog.so and libandroid.so (built as two stub .so files by
 * scripts/test-integrate.sh), so the packages' library targets link on Linux with
 * -Wl,--no-undefined. Nothing calls them: the test links, it does not run the JNI code. */
#define _GNU_SOURCE
#include <stddef.h>
#include <sys/types.h>

#ifdef STUB_LIBLOG
int __android_log_print(int prio, const char *tag, const char *fmt, ...) {
  (void)prio; (void)tag; (void)fmt;
  return 0;
}
#endif

#ifdef STUB_LIBANDROID
typedef struct AAssetManager AAssetManager;
typedef struct AAsset AAsset;
AAssetManager *AAssetManager_fromJava(void *env, void *asset_manager) {
  (void)env; (void)asset_manager;
  return NULL;
}
AAsset *AAssetManager_open(AAssetManager *mgr, const char *filename, int mode) {
  (void)mgr; (void)filename; (void)mode;
  return NULL;
}
int AAsset_read(AAsset *asset, void *buf, size_t count) {
  (void)asset; (void)buf; (void)count;
  return -1;
}
off64_t AAsset_getRemainingLength64(AAsset *asset) {
  (void)asset;
  return 0;
}
void AAsset_close(AAsset *asset) { (void)asset; }
#endif
