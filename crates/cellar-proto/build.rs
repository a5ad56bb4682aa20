//! Generates the gRPC messages and stubs from the repository's `proto/` directory.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_dir = "../../proto";
    let proto = format!("{proto_dir}/cellar/v1/cellar.proto");
    println!("cargo:rerun-if-changed={proto}");
    // A build script is single-threaded; PROTOC tells prost-build which compiler to run.
    std::env::set_var("PROTOC", protoc_bin_vendored::protoc_bin_path()?);
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_protos(&[proto.as_str()], &[proto_dir])?;
    Ok(())
}
