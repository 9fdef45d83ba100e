{
  "targets": [
    {
      "target_name": "zonal",
      "sources": [
        "native/addon.cc",
        "native/segment.cc",
        "native/slab.cc",
        "native/store.cc",
        "native/limit.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "NODE_ADDON_API_DISABLE_DEPRECATED"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++1y", "-std=gnu++17"],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "libraries": ["-lrt", "-lpthread"]
    }
  ]
}
