/**
 * Everything native, through JNA: the CUDA backend ({@code org.jmscclpp.cuda}), kernels compiled with NVRTC
 * ({@code org.jmscclpp.cuda.kernel}), the CUDA collectives ({@code org.jmscclpp.cuda.collective}) and the
 * InfiniBand transport, which the core finds through its SPIs. The raw bindings ({@code org.jmscclpp.nativebridge})
 * and the verbs transport ({@code org.jmscclpp.ib}) are not exported.
 *
 * <p>Native access: JNA loads the libraries and this module makes {@code java.lang.foreign} downcalls (the CUDA
 * driver's hot calls), both restricted; grant them at launch, {@code --enable-native-access=com.sun.jna,
 * org.jmscclpp.nativebridge} on the module path ({@code ALL-UNNAMED} on the class path, as {@code bin/jmscclpp}
 * and {@code bin/gpu-tests} do), or the JDK prints a warning at the first call.
 */
module org.jmscclpp.nativebridge {
    requires transitive org.jmscclpp.core;
    requires com.sun.jna;
    requires static org.jspecify;

    exports org.jmscclpp.cuda;
    exports org.jmscclpp.cuda.collective;
    exports org.jmscclpp.cuda.kernel;

    // JNA builds the bindings' proxies and structures by reflection
    opens org.jmscclpp.nativebridge to com.sun.jna;

    provides org.jmscclpp.core.spi.BackendProvider with org.jmscclpp.cuda.CudaBackendProvider;
    provides org.jmscclpp.core.spi.TransportProvider with org.jmscclpp.ib.IbTransportProvider;
    provides org.jmscclpp.core.spi.LauncherStore.Provider with org.jmscclpp.pmix.PmixStoreProvider;
    provides org.jmscclpp.core.collective.CollectiveEngine with org.jmscclpp.cuda.collective.CudaCollectiveEngine;
}
