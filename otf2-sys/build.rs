//! Links the OTF2 C library (Debian `libopen-trace-format2-dev`: `libopen-trace-format2.so`
//! in the default library path). `OTF2_LIB_DIR` adds a search folder for other installs.
fn main() {
    println!("cargo:rerun-if-env-changed=OTF2_LIB_DIR");
    if let Ok(dir) = std::env::var("OTF2_LIB_DIR") {
        println!("cargo:rustc-link-search=native={dir}");
    }
    println!("cargo:rustc-link-lib=dylib=open-trace-format2");
}
