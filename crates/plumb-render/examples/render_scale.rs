//! Times the native kustomize renderer on one kustomization, or the parse of plain
//! manifest files (the same parser, with origins), for `bench/render-scale.sh`.
//!
//!     render_scale ROOT kustomize overlay    # kustomize build of ROOT/overlay
//!     render_scale ROOT parse base/res       # every file of ROOT/base/res, parsed
//!
//! Prints the objects rendered and the time in milliseconds (process start-up and reading
//! the program excluded; the result is dropped after the clock stops). The time includes
//! converting every object to JSON with the origins of its scalars, on every core, as
//! `plumb diff` and the controller read them (`plumb render` prints the trees as they are).

use plumb_render::kustomize::{build, load_file};
use plumb_render::source::DirSource;
use std::time::Instant;

/// The allocator the `plumb` binary runs with (plumb-cli's main.rs), so the figures are
/// those of `plumb render`, not of glibc's allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, root, mode, path] = &args[..] else {
        eprintln!("usage: render_scale ROOT (kustomize|parse) PATH");
        std::process::exit(2);
    };
    let fs = match DirSource::open(std::path::Path::new(root)) {
        Ok(fs) => fs,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let started = Instant::now();
    let objects = match mode.as_str() {
        "kustomize" => build(&fs, path).map_err(|e| e.to_string()),
        "parse" => {
            let dir = std::path::Path::new(root).join(path);
            let mut files: Vec<String> = std::fs::read_dir(&dir)
                .map(|rd| {
                    rd.filter_map(|e| e.ok())
                        .map(|e| format!("{path}/{}", e.file_name().to_string_lossy()))
                        .collect()
                })
                .unwrap_or_default();
            files.sort();
            let parsed = plumb_core::parallel::map_coarse(&files, |f| load_file(&fs, f));
            parsed
                .into_iter()
                .collect::<Result<Vec<_>, _>>()
                .map(|v| v.into_iter().flatten().collect())
                .map_err(|e| e.to_string())
        }
        _ => Err(format!("unknown mode {mode:?}")),
    };
    let objects = objects.inspect(|objects| {
        plumb_core::parallel::map(objects, |o| o.object.convert());
    });
    let elapsed = started.elapsed();
    match objects {
        Ok(objects) => {
            let scalars: usize = objects.iter().map(|o| o.object.origins().len()).sum();
            println!(
                "objects {} scalars {} ms {:.1}",
                objects.len(),
                scalars,
                elapsed.as_secs_f64() * 1e3
            );
            // The process exits next: freeing every object would only delay it.
            std::mem::forget(objects);
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    }
}
