//! The input example server ([`mcpl_examples::input_server`]) on stdin/stdout.

#[tokio::main]
async fn main() -> mcpl_core::Result<()> {
    mcpl_examples::init_logging();
    mcpl_server::stdio::serve(mcpl_examples::input_server()).await
}
