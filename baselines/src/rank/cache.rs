//! An on-disk embedding cache keyed by model hash + text hash.
//!
//! One file per (model, encoding options, device): `<dir>/<model hash>-<options hash>.lxemb`, the
//! options hash covering the device ([`cache_tag`]): vectors computed on CUDA and on the CPU differ in
//! their last bits, so a run on one never reads the other's. Each file holds
//! `sha256(text) → vector` entries. The file is read whole on open and rewritten atomically
//! ([`lexbench_core::io::write_atomic`]) on [`EmbeddingCache::flush`], entries sorted by hash so the
//! bytes are deterministic. Format: magic `LXEMB1\0\0`, u32 dim, u64 count, then per entry 32 hash
//! bytes and `dim` little-endian f32.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use candle_core::DeviceLocation;

use crate::checkpoints::model_hash;
use crate::encoder::{Pooling, SentenceEncoder};
use crate::error::{Error, Result, io_err};
use lexbench_core::sha256_hex;

const MAGIC: &[u8; 8] = b"LXEMB1\0\0";

/// Cached vectors of one model under one set of options.
#[derive(Debug, Clone)]
pub struct EmbeddingCache {
    path: PathBuf,
    dim: Option<usize>,
    entries: BTreeMap<[u8; 32], Vec<f32>>,
    dirty: bool,
}

fn text_key(text: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(text.as_bytes()).into()
}

/// The device as the cache key names it: `cpu`, `cuda:N`, `metal:N`.
pub fn device_label(location: DeviceLocation) -> String {
    match location {
        DeviceLocation::Cpu => "cpu".to_owned(),
        DeviceLocation::Cuda { gpu_id } => format!("cuda:{gpu_id}"),
        DeviceLocation::Metal { gpu_id } => format!("metal:{gpu_id}"),
    }
}

/// The options tag of [`EmbeddingCache::file_for`] for vectors computed with these options on
/// `device`: everything that changes the vectors' bits.
pub fn cache_tag(max_len: usize, pooling: Pooling, normalize: bool, device: DeviceLocation) -> String {
    format!(
        "max_len={max_len} pooling={pooling:?} normalize={normalize} device={}",
        device_label(device)
    )
}

impl EmbeddingCache {
    /// The cache file for `model_hash` and an options tag (any string that changes when the vectors
    /// would: pooling, normalisation, truncation, device; [`cache_tag`]).
    pub fn file_for(dir: &Path, model_hash: &str, options_tag: &str) -> PathBuf {
        let m: String = model_hash.chars().take(16).collect();
        let o: String = sha256_hex(options_tag.as_bytes()).chars().take(16).collect();
        dir.join(format!("{m}-{o}.lxemb"))
    }

    /// Opens (or starts) the cache at `path`.
    pub fn open(path: PathBuf) -> Result<Self> {
        let mut cache = Self {
            path,
            dim: None,
            entries: BTreeMap::new(),
            dirty: false,
        };
        let bytes = match std::fs::read(&cache.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(cache),
            Err(e) => return Err(io_err(&cache.path)(e)),
        };
        let bad = |m: String| Error::Format {
            path: cache.path.clone(),
            message: m,
        };
        if bytes.len() < 20 || &bytes[..8] != MAGIC {
            return Err(bad("not an embedding cache (bad magic)".into()));
        }
        let dim = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize;
        let mut n8 = [0u8; 8];
        n8.copy_from_slice(&bytes[12..20]);
        let count = usize::try_from(u64::from_le_bytes(n8)).map_err(|_| bad("count".into()))?;
        let rec = 32 + 4 * dim;
        if bytes.len() != 20 + count * rec {
            return Err(bad(format!(
                "{} bytes, expected {} for {count} vectors of {dim}",
                bytes.len(),
                20 + count * rec
            )));
        }
        for r in bytes[20..].chunks_exact(rec) {
            let mut k = [0u8; 32];
            k.copy_from_slice(&r[..32]);
            let v = r[32..]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            cache.entries.insert(k, v);
        }
        cache.dim = Some(dim);
        Ok(cache)
    }

    /// Number of cached vectors.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The cached vector of `text`.
    pub fn get(&self, text: &str) -> Option<&[f32]> {
        self.entries.get(&text_key(text)).map(Vec::as_slice)
    }

    /// Caches `vector` for `text`; every vector must have the same dimension.
    pub fn insert(&mut self, text: &str, vector: Vec<f32>) -> Result<()> {
        match self.dim {
            Some(d) if d != vector.len() => {
                return Err(Error::data(
                    format!("embedding cache {}", self.path.display()),
                    format!(
                        "it holds {d}-dimensional vectors, got one of {} (another model's cache?)",
                        vector.len()
                    ),
                ));
            }
            _ => self.dim = Some(vector.len()),
        }
        self.entries.insert(text_key(text), vector);
        self.dirty = true;
        Ok(())
    }

    /// Writes the cache atomically if anything was added.
    pub fn flush(&mut self) -> Result<()> {
        if !self.dirty {
            return Ok(());
        }
        let dim = self.dim.unwrap_or(0);
        lexbench_core::io::write_atomic(&self.path, |w| {
            w.write_all(MAGIC)?;
            w.write_all(&(dim as u32).to_le_bytes())?;
            w.write_all(&(self.entries.len() as u64).to_le_bytes())?;
            for (k, v) in &self.entries {
                w.write_all(k)?;
                for x in v {
                    w.write_all(&x.to_le_bytes())?;
                }
            }
            Ok(())
        })?;
        self.dirty = false;
        Ok(())
    }
}

/// A [`SentenceEncoder`] in front of an [`EmbeddingCache`]: only texts not yet cached are encoded.
#[derive(Debug)]
pub struct CachedEncoder<'a> {
    encoder: &'a SentenceEncoder,
    cache: EmbeddingCache,
}

impl<'a> CachedEncoder<'a> {
    /// Opens the cache for the model in `model_dir` (its hash, [`model_hash`]), the encoder's
    /// options and its device, under `cache_dir`.
    pub fn open(encoder: &'a SentenceEncoder, model_dir: &Path, cache_dir: &Path) -> Result<Self> {
        let o = encoder.options();
        let mut tag = cache_tag(
            encoder.tokenizer().max_len(),
            encoder.pooling(),
            o.normalize,
            encoder.model().device().location(),
        );
        // The sentence-transformers head (Dense, LayerNorm, Normalize and their weights' sha256)
        // changes the vectors too; folders without one keep their old tag.
        if let Some(m) = encoder.modules() {
            tag.push(' ');
            tag.push_str(m.tag());
        }
        let path = EmbeddingCache::file_for(cache_dir, &model_hash(model_dir)?, &tag);
        Ok(Self {
            encoder,
            cache: EmbeddingCache::open(path)?,
        })
    }

    /// The cache.
    pub fn cache(&self) -> &EmbeddingCache {
        &self.cache
    }

    /// One vector per text (cached or encoded now), in input order. New vectors are encoded in
    /// chunks and flushed to disk after each ([`encode_flushing`]), so a run stopped part-way keeps
    /// what it encoded and the next run starts from there.
    pub fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut missing: Vec<&str> = texts
            .iter()
            .copied()
            .filter(|t| self.cache.get(t).is_none())
            .collect();
        missing.sort_unstable();
        missing.dedup();
        let encoder = self.encoder;
        encode_flushing(&mut self.cache, &missing, FLUSH_EVERY, |chunk| {
            encoder.embed(chunk)
        })?;
        texts
            .iter()
            .map(|t| {
                self.cache
                    .get(t)
                    .map(<[f32]>::to_vec)
                    .ok_or_else(|| Error::internal("embedding cache: a vector just inserted is missing"))
            })
            .collect()
    }
}

/// Texts encoded between two flushes of the cache, at least: a flush rewrites the whole file, so
/// the interval also grows to an eighth of the cache (the bytes written stay linear in its size).
pub const FLUSH_EVERY: usize = 2048;

/// Encodes `missing` with `encode` in chunks, inserting and flushing after each: the first
/// `flush_every` texts (or an eighth of the cache, if more), then the next, and so on. On an error
/// the chunks done before it are on disk. Progress goes to a bar on a terminal and to the log
/// (`-v`) elsewhere.
pub fn encode_flushing(
    cache: &mut EmbeddingCache,
    missing: &[&str],
    flush_every: usize,
    mut encode: impl FnMut(&[&str]) -> Result<Vec<Vec<f32>>>,
) -> Result<()> {
    if missing.is_empty() {
        return Ok(());
    }
    let bar = super::progress_bar(missing.len(), "encoding", "texts", missing.len() > flush_every);
    let mut done = 0;
    while done < missing.len() {
        let step = flush_every.max(1).max(cache.len() / 8);
        let chunk = &missing[done..(done + step).min(missing.len())];
        let vecs = encode(chunk)?;
        if vecs.len() != chunk.len() {
            return Err(Error::internal(
                "embedding cache: the encoder returned another number of vectors",
            ));
        }
        for (t, v) in chunk.iter().zip(vecs) {
            cache.insert(t, v)?;
        }
        cache.flush()?;
        done += chunk.len();
        bar.set_position(done as u64);
        tracing::info!(encoded = done, of = missing.len(), cache = %cache.path.display(), "embeddings flushed");
    }
    bar.finish_and_clear();
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Properties: the cache key names the device, so vectors cached on one device are a miss on
    //! another and a hit on the same one.
    use super::*;

    /// A run stopped part-way (here: the encoder fails on the third chunk) leaves the chunks before
    /// it on disk, and the next run encodes only the rest.
    #[test]
    fn an_interrupted_encoding_keeps_the_chunks_done() {
        let dir = lexbench_core::testing::scratch_root()
            .join(format!("lexbench-cache-chunks-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = EmbeddingCache::file_for(&dir, "ab12", "t");
        let texts: Vec<String> = (0..10).map(|i| format!("text {i}")).collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vector = |t: &str| vec![t.len() as f32, 1.0];
        let mut calls = 0;
        let mut cache = EmbeddingCache::open(path.clone()).unwrap();
        let failed = encode_flushing(&mut cache, &texts, 3, |chunk| {
            calls += 1;
            if calls == 3 {
                return Err(Error::internal("killed"));
            }
            Ok(chunk.iter().map(|t| vector(t)).collect())
        });
        assert!(failed.is_err());
        let reopened = EmbeddingCache::open(path.clone()).unwrap();
        assert_eq!(reopened.len(), 6, "two chunks of three on disk");
        let mut cache = reopened;
        let missing: Vec<&str> = texts.iter().copied().filter(|t| cache.get(t).is_none()).collect();
        let mut encoded = Vec::new();
        encode_flushing(&mut cache, &missing, 3, |chunk| {
            encoded.extend(chunk.iter().map(|t| t.to_string()));
            Ok(chunk.iter().map(|t| vector(t)).collect())
        })
        .unwrap();
        assert_eq!(encoded.len(), 4, "only the rest: {encoded:?}");
        let all = EmbeddingCache::open(path).unwrap();
        assert!(texts.iter().all(|t| all.get(t) == Some(&vector(t)[..])));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_device_is_part_of_the_key() {
        let dir = lexbench_core::testing::scratch_root()
            .join(format!("lexbench-cache-device-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let tag = |device| cache_tag(128, Pooling::Mean, true, device);
        let cpu = tag(DeviceLocation::Cpu);
        let cuda = tag(DeviceLocation::Cuda { gpu_id: 0 });
        assert!(cpu.ends_with("device=cpu"), "{cpu}");
        assert!(cuda.ends_with("device=cuda:0"), "{cuda}");
        assert_ne!(cuda, tag(DeviceLocation::Cuda { gpu_id: 1 }));
        let file = |tag: &str| EmbeddingCache::file_for(&dir, "ab12", tag);
        assert_ne!(file(&cpu), file(&cuda));
        assert_eq!(file(&cpu), file(&tag(DeviceLocation::Cpu)));

        let mut on_cpu = EmbeddingCache::open(file(&cpu)).unwrap();
        on_cpu.insert("a text", vec![0.25, 0.5]).unwrap();
        on_cpu.flush().unwrap();
        let again = EmbeddingCache::open(file(&tag(DeviceLocation::Cpu))).unwrap();
        assert_eq!(
            again.get("a text"),
            Some(&[0.25f32, 0.5][..]),
            "same device: a hit"
        );
        let on_cuda = EmbeddingCache::open(file(&cuda)).unwrap();
        assert_eq!(on_cuda.get("a text"), None, "another device: a miss");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
