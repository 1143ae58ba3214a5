//! A PyTorch checkpoint's pickle checked before anything is built from it: a walk over its opcodes
//! that keeps, for every value on the stack and in the memo, only what it costs (objects, bytes of
//! text, depth) and what it is (a mark, a global, a list, a dict, something else), never the value.
//!
//! candle's reader (`candle_core::pickle`) builds the objects a pickle describes, and copies an
//! object whole on every memo read (`BINGET`) and write (`BINPUT`): a pickle of a kilobyte that
//! doubles a list through its memo 63 times asks for 2⁶³ objects, and 200,000 nested empty lists
//! overflow the stack when they are dropped. The walk charges every object candle would build,
//! copies included, and refuses the pickle (naming the bound) before candle reads it when
//!
//! - the objects built pass [`MAX_OBJECTS`] (a state dict of BERT-base builds about 5,000; the
//!   bound allows some 40,000 tensors),
//! - the text held passes [`MAX_TEXT_BYTES`] (tensor names and storage keys),
//! - an object nests deeper than [`MAX_DEPTH`] (a state dict nests 5 deep), or
//! - a global's name is longer than [`MAX_NAME_BYTES`].
//!
//! It also checks what the globals name ([`super::weights::ALLOWED_GLOBALS`]): every global is seen
//! as it is read. The walk takes time and memory in proportion to the pickle's length (a stack of
//! costs, a memo of costs), whatever the pickle describes.

use std::collections::HashMap;
use std::io::{BufRead, Read};

use candle_core::pickle::OpCode;

/// The most objects a checkpoint's pickle may build, memo copies included.
pub const MAX_OBJECTS: u64 = 1 << 20;
/// The most bytes of text (names, keys) its objects may hold, memo copies included.
pub const MAX_TEXT_BYTES: u64 = 64 << 20;
/// The deepest an object may nest (a list in a list … is one level each).
pub const MAX_DEPTH: u32 = 64;
/// The longest module or class name a global may have.
pub const MAX_NAME_BYTES: usize = 256;

/// What a value is, as far as the walk needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Mark,
    Global(String),
    List,
    Dict,
    Other,
}

/// A value on the stack or in the memo: what it is and what it costs.
#[derive(Debug, Clone)]
struct Shape {
    kind: Kind,
    objects: u64,
    bytes: u64,
    depth: u32,
}

impl Shape {
    fn scalar(kind: Kind, bytes: u64) -> Self {
        Self {
            kind,
            objects: 1,
            bytes,
            depth: 1,
        }
    }

    /// A container of `kind` holding `items`.
    fn holding(kind: Kind, items: &[Shape]) -> Self {
        Self {
            kind,
            objects: 1 + items.iter().map(|s| s.objects).sum::<u64>(),
            bytes: items.iter().map(|s| s.bytes).sum(),
            depth: 1 + items.iter().map(|s| s.depth).max().unwrap_or(0),
        }
    }

    /// `items` added to this container (APPEND, SETITEM and their plurals).
    fn absorb(&mut self, items: &[Shape]) {
        self.objects += items.iter().map(|s| s.objects).sum::<u64>();
        self.bytes += items.iter().map(|s| s.bytes).sum::<u64>();
        self.depth = self
            .depth
            .max(1 + items.iter().map(|s| s.depth).max().unwrap_or(0));
    }
}

/// The walk's state (module docs).
struct Walk<'a> {
    stack: Vec<Shape>,
    marks: Vec<usize>,
    memo: HashMap<u32, Shape>,
    objects: u64,
    bytes: u64,
    allowed: &'a [&'a str],
}

impl Walk<'_> {
    /// Charges what candle builds for `s` (a new object, or a copy of one).
    fn charge(&mut self, s: &Shape) -> Result<(), String> {
        self.objects = self.objects.saturating_add(s.objects);
        self.bytes = self.bytes.saturating_add(s.bytes);
        if self.objects > MAX_OBJECTS {
            return Err(format!(
                "it builds more than {MAX_OBJECTS} objects (memo copies counted, as the reader makes them): \
                 a state dict builds a few per tensor; refused before anything was built"
            ));
        }
        if self.bytes > MAX_TEXT_BYTES {
            return Err(format!(
                "its objects hold more than {} MiB of text (memo copies counted): a state dict holds its \
                 tensors' names; refused before anything was built",
                MAX_TEXT_BYTES >> 20
            ));
        }
        if s.depth > MAX_DEPTH {
            return Err(format!(
                "an object nests deeper than {MAX_DEPTH} levels: a state dict nests a few; refused before \
                 anything was built"
            ));
        }
        Ok(())
    }

    /// Pushes a new object (charged once).
    fn push(&mut self, s: Shape) -> Result<(), String> {
        self.charge(&Shape {
            objects: 1,
            bytes: if s.objects == 1 { s.bytes } else { 0 },
            ..s.clone()
        })?;
        if s.kind == Kind::Mark {
            self.marks.push(self.stack.len());
        }
        self.stack.push(s);
        Ok(())
    }

    fn pop(&mut self) -> Result<Shape, String> {
        let s = self
            .stack
            .pop()
            .ok_or("an opcode takes a value from an empty stack")?;
        if s.kind == Kind::Mark {
            self.marks.pop();
        }
        Ok(s)
    }

    fn pop_to_mark(&mut self) -> Result<Vec<Shape>, String> {
        let at = self
            .marks
            .pop()
            .ok_or("an opcode looks for a mark that is not on the stack")?;
        let items = self.stack.split_off(at + 1);
        self.stack.pop();
        Ok(items)
    }

    fn top(&mut self, want: Kind, op: &str) -> Result<&mut Shape, String> {
        match self.stack.last_mut() {
            Some(s) if s.kind == want => Ok(s),
            _ => Err(format!("{op} on something that is not a {want:?}")),
        }
    }

    /// A container built of items already charged: only its own object is new.
    fn push_container(&mut self, kind: Kind, items: &[Shape]) -> Result<(), String> {
        let s = Shape::holding(kind, items);
        self.charge(&Shape {
            objects: 1,
            bytes: 0,
            ..s.clone()
        })?;
        self.stack.push(s);
        Ok(())
    }

    fn grow_top(&mut self, want: Kind, op: &str, items: &[Shape]) -> Result<(), String> {
        let top = self.top(want, op)?;
        top.absorb(items);
        let grown = Shape {
            objects: 0,
            bytes: 0,
            ..top.clone()
        };
        self.charge(&grown)
    }
}

fn read_n<const N: usize>(r: &mut impl Read) -> Result<[u8; N], String> {
    let mut b = [0u8; N];
    r.read_exact(&mut b)
        .map_err(|e| format!("the pickle ends inside an opcode's argument ({e})"))?;
    Ok(b)
}

/// A global's module or class name: a line of at most [`MAX_NAME_BYTES`].
fn read_name(r: &mut impl BufRead) -> Result<String, String> {
    let mut line = Vec::new();
    r.by_ref()
        .take(MAX_NAME_BYTES as u64 + 1)
        .read_until(b'\n', &mut line)
        .map_err(|e| format!("reading a global's name: {e}"))?;
    if line.last() != Some(&b'\n') {
        return Err(if line.len() > MAX_NAME_BYTES {
            format!("a global's name is longer than {MAX_NAME_BYTES} bytes")
        } else {
            "the pickle ends inside a global's name".to_owned()
        });
    }
    line.pop();
    Ok(String::from_utf8_lossy(&line).into_owned())
}

/// Walks the pickle `r` to its STOP (module docs): `Ok` when candle's reader may build it; `Err`
/// says why not (an opcode the reader does not know, a global not in `allowed`, a bound passed,
/// a malformed pickle).
pub fn walk(r: &mut impl BufRead, allowed: &[&str]) -> Result<(), String> {
    let mut w = Walk {
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        objects: 0,
        bytes: 0,
        allowed,
    };
    let other = || Shape::scalar(Kind::Other, 0);
    loop {
        let [byte] = match read_n::<1>(r) {
            Ok(b) => b,
            Err(_) => return Err("the pickle ends before its STOP opcode".into()),
        };
        let op = OpCode::try_from(byte).map_err(|b| {
            format!("opcode 0x{b:02x} is not one of a state dict's (the reader knows no other)")
        })?;
        match op {
            OpCode::Proto => {
                read_n::<1>(r)?;
            }
            OpCode::Global => {
                let module = read_name(r)?;
                let class = read_name(r)?;
                let global = format!("{module}.{class}");
                if !w.allowed.contains(&global.as_str()) {
                    return Err(format!("global:{global}"));
                }
                let bytes = (module.len() + class.len()) as u64;
                w.push(Shape::scalar(Kind::Global(global), bytes))?;
            }
            OpCode::BinInt1 => {
                read_n::<1>(r)?;
                w.push(other())?;
            }
            OpCode::BinInt2 => {
                read_n::<2>(r)?;
                w.push(other())?;
            }
            OpCode::BinInt => {
                read_n::<4>(r)?;
                w.push(other())?;
            }
            OpCode::BinFloat => {
                read_n::<8>(r)?;
                w.push(other())?;
            }
            OpCode::Long1 => {
                let [n] = read_n::<1>(r)?;
                if n > 8 {
                    return Err(format!("a LONG1 of {n} bytes: a state dict's integers fit in 8"));
                }
                for _ in 0..n {
                    read_n::<1>(r)?;
                }
                w.push(other())?;
            }
            OpCode::BinUnicode => {
                let len = u64::from(u32::from_le_bytes(read_n::<4>(r)?));
                if w.bytes.saturating_add(len) > MAX_TEXT_BYTES {
                    return Err(format!(
                        "a string of {len} bytes takes its text past {} MiB; refused before it was read",
                        MAX_TEXT_BYTES >> 20
                    ));
                }
                let mut text = Vec::new();
                r.by_ref()
                    .take(len)
                    .read_to_end(&mut text)
                    .map_err(|e| format!("reading a string: {e}"))?;
                if text.len() as u64 != len {
                    return Err("the pickle ends inside a string".into());
                }
                std::str::from_utf8(&text).map_err(|_| "a string is not UTF-8".to_owned())?;
                w.push(Shape::scalar(Kind::Other, len))?;
            }
            OpCode::NewTrue | OpCode::NewFalse | OpCode::None => w.push(other())?,
            OpCode::Mark => w.push(Shape::scalar(Kind::Mark, 0))?,
            OpCode::EmptyTuple => w.push(other())?,
            OpCode::EmptyList => w.push(Shape::scalar(Kind::List, 0))?,
            OpCode::EmptyDict => w.push(Shape::scalar(Kind::Dict, 0))?,
            OpCode::BinPersId => {
                let id = w.pop()?;
                w.push_container(Kind::Other, &[id])?;
            }
            OpCode::Tuple => {
                let items = w.pop_to_mark()?;
                w.push_container(Kind::Other, &items)?;
            }
            OpCode::Tuple1 | OpCode::Tuple2 | OpCode::Tuple3 => {
                let n = match op {
                    OpCode::Tuple1 => 1,
                    OpCode::Tuple2 => 2,
                    _ => 3,
                };
                let mut items = (0..n).map(|_| w.pop()).collect::<Result<Vec<_>, _>>()?;
                items.reverse();
                w.push_container(Kind::Other, &items)?;
            }
            OpCode::Append => {
                let v = w.pop()?;
                w.grow_top(Kind::List, "APPEND", &[v])?;
            }
            OpCode::Appends => {
                let items = w.pop_to_mark()?;
                w.grow_top(Kind::List, "APPENDS", &items)?;
            }
            OpCode::SetItem => {
                let v = w.pop()?;
                let k = w.pop()?;
                w.grow_top(Kind::Dict, "SETITEM", &[k, v])?;
            }
            OpCode::SetItems => {
                let items = w.pop_to_mark()?;
                if items.len() % 2 != 0 {
                    return Err("SETITEMS with an odd number of values".into());
                }
                w.grow_top(Kind::Dict, "SETITEMS", &items)?;
            }
            OpCode::Dict => {
                let items = w.pop_to_mark()?;
                if items.len() % 2 != 0 {
                    return Err("DICT with an odd number of values".into());
                }
                w.push_container(Kind::Dict, &items)?;
            }
            OpCode::Build => {
                let args = w.pop()?;
                let obj = w.pop()?;
                if obj.kind == Kind::Dict && args.kind == Kind::Dict {
                    let mut merged = obj;
                    merged.absorb(&[args]);
                    // The dict's own object is not new, its items were charged: only the depth.
                    w.charge(&Shape {
                        objects: 0,
                        bytes: 0,
                        ..merged.clone()
                    })?;
                    w.stack.push(merged);
                } else {
                    w.push_container(Kind::Other, &[obj, args])?;
                }
            }
            OpCode::Reduce | OpCode::NewObj => {
                let args = w.pop()?;
                let callable = w.pop()?;
                let dict = op == OpCode::Reduce
                    && matches!(&callable.kind, Kind::Global(g)
                        if g == "collections.OrderedDict" || g == "collections.defaultdict");
                if dict {
                    w.push(Shape::scalar(Kind::Dict, 0))?;
                } else {
                    w.push_container(Kind::Other, &[callable, args])?;
                }
            }
            OpCode::BinGet | OpCode::LongBinGet => {
                let id = if op == OpCode::BinGet {
                    u32::from(read_n::<1>(r)?[0])
                } else {
                    u32::from_le_bytes(read_n::<4>(r)?)
                };
                let s = w
                    .memo
                    .get(&id)
                    .cloned()
                    .ok_or_else(|| format!("a memo read of {id}, never written"))?;
                // The reader copies the object whole.
                w.charge(&s)?;
                if s.kind == Kind::Mark {
                    w.marks.push(w.stack.len());
                }
                w.stack.push(s);
            }
            OpCode::BinPut | OpCode::LongBinPut => {
                let id = if op == OpCode::BinPut {
                    u32::from(read_n::<1>(r)?[0])
                } else {
                    u32::from_le_bytes(read_n::<4>(r)?)
                };
                let s = w
                    .stack
                    .last()
                    .cloned()
                    .ok_or("a memo write with an empty stack")?;
                w.charge(&s)?;
                w.memo.insert(id, s);
            }
            OpCode::Stop => return Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    //! Properties checked, on pickles written here opcode by opcode: the memo bomb (a list doubled
    //! through the memo 63 times, about a kilobyte) and 200,000 nested lists are refused, naming
    //! the bound, in time and memory proportional to their length; a long string's length and a
    //! global's endless name are refused before they are read; a state dict's shape (an
    //! OrderedDict of rebuilt tensors, with memo reads as torch.save writes them) passes; a global
    //! not allowed is reported.

    use super::*;

    const ALLOWED: [&str; 2] = ["collections.OrderedDict", "torch._utils._rebuild_tensor_v2"];

    fn walk_bytes(p: &[u8]) -> Result<(), String> {
        walk(&mut std::io::Cursor::new(p), &ALLOWED)
    }

    /// A list put in memo 0, then `n` times: a list of two memo copies of the last, put again.
    pub(crate) fn memo_bomb(n: usize) -> Vec<u8> {
        let mut p = vec![0x80, 2, b']', b'q', 0];
        for _ in 0..n {
            p.extend_from_slice(&[b']', b'(', b'h', 0, b'h', 0, b'e', b'q', 0]);
        }
        p.push(b'.');
        p
    }

    /// `n` empty lists, each appended to the one before.
    pub(crate) fn nested_lists(n: usize) -> Vec<u8> {
        let mut p = vec![0x80, 2];
        p.extend(std::iter::repeat_n(b']', n));
        p.extend(std::iter::repeat_n(b'a', n - 1));
        p.push(b'.');
        p
    }

    #[test]
    fn a_memo_bomb_is_refused_by_its_object_count() {
        let p = memo_bomb(63);
        assert!(p.len() < 1200, "{}", p.len());
        let e = walk_bytes(&p).unwrap_err();
        assert!(e.contains(&format!("more than {MAX_OBJECTS} objects")), "{e}");
        // A few doublings are a small list of lists: fine.
        walk_bytes(&memo_bomb(5)).unwrap();
    }

    #[test]
    fn deep_nesting_is_refused_by_its_depth() {
        let e = walk_bytes(&nested_lists(200_000)).unwrap_err();
        assert!(e.contains(&format!("deeper than {MAX_DEPTH} levels")), "{e}");
        walk_bytes(&nested_lists(MAX_DEPTH as usize)).unwrap();
        assert!(walk_bytes(&nested_lists(MAX_DEPTH as usize + 1)).is_err());
    }

    #[test]
    fn a_huge_string_or_name_is_refused_before_it_is_read() {
        let mut p = vec![0x80, 2, b'X'];
        p.extend_from_slice(&u32::MAX.to_le_bytes());
        let e = walk_bytes(&p).unwrap_err();
        assert!(e.contains("refused before it was read"), "{e}");
        let mut p = vec![b'c'];
        p.extend(std::iter::repeat_n(b'a', 10_000));
        let e = walk_bytes(&p).unwrap_err();
        assert!(e.contains(&format!("longer than {MAX_NAME_BYTES} bytes")), "{e}");
    }

    #[test]
    fn a_state_dicts_shape_passes_and_other_globals_are_named() {
        // OrderedDict() ; {'w': _rebuild_tensor_v2(('storage', 'x', '0', 'cpu', 4), 0, (2, 2), (2, 1))}
        let mut p = vec![0x80, 2];
        p.extend_from_slice(b"ccollections\nOrderedDict\nq\x00)Rq\x01");
        p.extend_from_slice(b"X\x01\x00\x00\x00w");
        p.extend_from_slice(b"ctorch._utils\n_rebuild_tensor_v2\nq\x02(");
        p.extend_from_slice(
            b"(X\x07\x00\x00\x00storageX\x01\x00\x00\x00xX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x04tQ",
        );
        p.extend_from_slice(b"K\x00K\x02K\x02\x86K\x02K\x01\x86\x89h\x00)Rtq\x03Rq\x04s.");
        walk_bytes(&p).unwrap();
        let e = walk_bytes(b"cposix\nsystem\n.").unwrap_err();
        assert_eq!(e, "global:posix.system");
        assert!(walk_bytes(b"a.").unwrap_err().contains("empty stack"));
        assert!(walk_bytes(b"}K\x01a.").unwrap_err().contains("APPEND"));
        assert!(walk_bytes(b"]").unwrap_err().contains("before its STOP"));
    }
}
