/* Stand-in for the NDK's <android/asset_manager.h> (see log.h here): what whisper.rn's jni.cpp
 * uses, so it compiles and links on Linux in scripts/test-integrate.sh. */
#pragma once
#include <stddef.h>
#include <sys/types.h>
#ifdef __cplusplus
extern "C" {
#endif
typedef struct AAssetManager AAssetManager;
typedef struct AAsset AAsset;
enum { AASSET_MODE_UNKNOWN = 0, AASSET_MODE_RANDOM = 1, AASSET_MODE_STREAMING = 2, AASSET_MODE_BUFFER = 3 };
AAsset *AAssetManager_open(AAssetManager *mgr, const char *filename, int mode);
int AAsset_read(AAsset *asset, void *buf, size_t count);
off64_t AAsset_getRemainingLength64(AAsset *asset);
void AAsset_close(AAsset *asset);
#ifdef __cplusplus
}
#endif
