/* Stand-in for the NDK's <android/asset_manager_jni.h> (see log.h here). */
#pragma once
#include <jni.h>
#include "asset_manager.h"
#ifdef __cplusplus
extern "C" {
#endif
AAssetManager *AAssetManager_fromJava(JNIEnv *env, jobject assetManager);
#ifdef __cplusplus
}
#endif
