//! Which lines changed between two texts, as GNU diffutils decides it.
//!
//! Many edit scripts turn one text into the other; `argocd app diff` shows the
//! one GNU `diff` picks, so this is GNU's own matching (`analyze.c` and `io.c`):
//! each file buffered as GNU reads it (an incomplete last line matches only the
//! other file's incomplete last line), the identical prefix and suffix trimmed,
//! lines without a match (or with very many) discarded before the search,
//! Myers' linear-space middle-snake search without `--minimal`, and each run of
//! changed lines shifted to where GNU leaves it. The result is the change list
//! `diff_output.rs` prints.
//!
//! Must match GNU diffutils 3.8 hunk for hunk, not just be a valid diff. Binary
//! file detection (NUL bytes) is not reproduced.

use std::collections::HashMap;

/// One input file as GNU diff buffers it: the bytes with a newline appended
/// when the last line lacks one.
pub(super) struct TextFile<'a> {
    /// Buffer: the text, plus `\n` when `missing_newline`.
    buf: Vec<u8>,
    /// The original text.
    text: &'a str,
    missing_newline: bool,
    /// Byte range of each line in `buf`, newline included.
    pub(super) lines: Vec<(usize, usize)>,
}

impl<'a> TextFile<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        let mut buf = text.as_bytes().to_vec();
        let missing_newline = !buf.is_empty() && !text.ends_with('\n');
        if missing_newline {
            buf.push(b'\n');
        }
        let mut lines = Vec::new();
        let mut start = 0;
        for (i, &c) in buf.iter().enumerate() {
            if c == b'\n' {
                lines.push((start, i + 1));
                start = i + 1;
            }
        }
        Self {
            buf,
            text,
            missing_newline,
            lines,
        }
    }

    /// Appends line `i` with its newline, or GNU's marker when it has none.
    pub(super) fn push_line(&self, out: &mut String, i: usize) {
        let (s, e) = self.lines[i];
        let content_end = (e - 1).min(self.text.len());
        out.push_str(self.text.get(s..content_end).unwrap_or(""));
        out.push('\n');
        if self.missing_newline && i + 1 == self.lines.len() {
            out.push_str("\\ No newline at end of file\n");
        }
    }

    /// Index of the line that starts at byte `pos` (a line boundary).
    fn line_at(&self, pos: usize) -> usize {
        self.lines.partition_point(|&(s, _)| s < pos)
    }
}

/// One change: `deleted` lines of the old file from `line0` are replaced by
/// `inserted` lines of the new file from `line1` (0-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Change {
    pub(super) line0: usize,
    pub(super) line1: usize,
    pub(super) deleted: usize,
    pub(super) inserted: usize,
}

/// The edit script GNU diff computes, in order. `horizon` is the number of
/// identical lines kept around the differing middle (GNU uses the context
/// size: 0 for normal output, 3 for `-u`), which bounds boundary shifting.
pub(super) fn gnu_changes(a: &TextFile, b: &TextFile, horizon: usize) -> Vec<Change> {
    let (prefix_end, suffix0, suffix1) = identical_ends(a, b, horizon);
    let first_line = a.line_at(prefix_end);
    let mid0 = first_line..a.line_at(suffix0);
    let mid1 = b.line_at(prefix_end)..b.line_at(suffix1);

    let mut classes: HashMap<(&[u8], bool), usize> = HashMap::new();
    let eq0 = line_classes(a, mid0.clone(), &mut classes);
    let eq1 = line_classes(b, mid1.clone(), &mut classes);
    let nclasses = classes.len();

    let mut changed = [vec![false; eq0.len() + 2], vec![false; eq1.len() + 2]];
    let undiscarded = discard_confusing_lines(&eq0, &eq1, nclasses, &mut changed);
    compare_seq(&undiscarded, &mut changed);
    shift_boundaries(&eq0, &eq1, &mut changed);

    // Build the script from the change flags (index k is at k + 1).
    let (n0, n1) = (eq0.len(), eq1.len());
    let mut script = Vec::new();
    let (mut i0, mut i1) = (0, 0);
    let flag = |f: usize, k: usize| changed[f].get(k + 1).copied().unwrap_or(false);
    while i0 < n0 || i1 < n1 {
        if flag(0, i0) || flag(1, i1) {
            let (s0, s1) = (i0, i1);
            while flag(0, i0) {
                i0 += 1;
            }
            while flag(1, i1) {
                i1 += 1;
            }
            script.push(Change {
                line0: mid0.start + s0,
                line1: mid1.start + s1,
                deleted: i0 - s0,
                inserted: i1 - s1,
            });
        }
        i0 += 1;
        i1 += 1;
    }
    script
}

/// Equivalence class of each line in `range`. The incomplete last line of a
/// file only matches the other file's incomplete last line.
fn line_classes<'t>(
    f: &'t TextFile<'_>,
    range: std::ops::Range<usize>,
    classes: &mut HashMap<(&'t [u8], bool), usize>,
) -> Vec<usize> {
    range
        .map(|i| {
            let (s, e) = f.lines[i];
            let incomplete = f.missing_newline && e == f.buf.len();
            let next = classes.len();
            *classes.entry((&f.buf[s..e], incomplete)).or_insert(next)
        })
        .collect()
}

/// GNU `find_identical_ends`: the common byte prefix (backed up to a line
/// start, then `horizon` more lines) and the common suffix (moved forward to
/// a line start, then `horizon` more lines). Returns the prefix end (same in
/// both buffers) and where the suffix starts in each buffer.
fn identical_ends(a: &TextFile, b: &TextFile, horizon: usize) -> (usize, usize, usize) {
    let (b0, b1) = (&a.buf, &b.buf);
    let (n0, n1) = (b0.len(), b1.len());
    let mut p = b0.iter().zip(b1.iter()).take_while(|(x, y)| x == y).count();
    // Do not count an appended newline as part of the prefix.
    if p > 0
        && (n0 - usize::from(a.missing_newline) < p) != (n1 - usize::from(b.missing_newline) < p)
    {
        p -= 1;
    }
    let mut hor = horizon;
    while p != 0 {
        if b0[p - 1] == b'\n' {
            if hor == 0 {
                break;
            }
            hor -= 1;
        }
        p -= 1;
    }
    let prefix_end = p;

    if a.missing_newline != b.missing_newline {
        return (prefix_end, n0, n1);
    }
    let (mut p0, mut p1) = (n0, n1);
    let beg0 = prefix_end + n0.saturating_sub(n1);
    while p0 != beg0 {
        if b0[p0 - 1] != b1[p1 - 1] {
            break;
        }
        p0 -= 1;
        p1 -= 1;
    }
    let start0 = p0;
    let at_line_beginning = (p0 == 0 || b0[p0 - 1] == b'\n') && (p1 == 0 || b1[p1 - 1] == b'\n');
    let mut skip = horizon + usize::from(!at_line_beginning);
    while skip > 0 && p0 != n0 {
        skip -= 1;
        while p0 < n0 {
            p0 += 1;
            if b0[p0 - 1] == b'\n' {
                break;
            }
        }
    }
    (prefix_end, p0, p1 + (p0 - start0))
}

fn floor_log2(n: usize) -> u32 {
    usize::BITS - 1 - n.max(1).leading_zeros()
}

/// The lines left for the Myers search (class ids plus original indexes).
struct Undiscarded {
    x: Vec<usize>,
    y: Vec<usize>,
    xreal: Vec<usize>,
    yreal: Vec<usize>,
}

/// GNU `discard_confusing_lines`: lines with no match in the other file, and
/// runs of lines with very many matches, are marked changed up front and
/// left out of the search.
fn discard_confusing_lines(
    eq0: &[usize],
    eq1: &[usize],
    nclasses: usize,
    changed: &mut [Vec<bool>; 2],
) -> Undiscarded {
    let files = [eq0, eq1];
    let mut counts = [vec![0usize; nclasses], vec![0usize; nclasses]];
    for f in 0..2 {
        for &e in files[f] {
            counts[f][e] += 1;
        }
    }
    // 0: keep, 1: discard, 2: provisionally discard.
    let mut discards: [Vec<u8>; 2] = [vec![0; eq0.len()], vec![0; eq1.len()]];
    for f in 0..2 {
        let end = files[f].len();
        let many: usize = if end < 64 {
            5
        } else {
            5 << ((floor_log2(end) >> 1) - 3)
        };
        for (i, &e) in files[f].iter().enumerate() {
            let nmatch = counts[1 - f][e];
            if nmatch == 0 {
                discards[f][i] = 1;
            } else if nmatch > many {
                discards[f][i] = 2;
            }
        }
    }
    for d in &mut discards {
        refine_discards(d);
    }
    let mut out = Undiscarded {
        x: Vec::new(),
        y: Vec::new(),
        xreal: Vec::new(),
        yreal: Vec::new(),
    };
    for f in 0..2 {
        for (i, &e) in files[f].iter().enumerate() {
            if discards[f][i] == 0 {
                if f == 0 {
                    out.x.push(e);
                    out.xreal.push(i);
                } else {
                    out.y.push(e);
                    out.yreal.push(i);
                }
            } else {
                changed[f][i + 1] = true;
            }
        }
    }
    out
}

/// Keeps provisional discards only inside runs of real discards, following
/// GNU's run-length rules.
fn refine_discards(d: &mut [u8]) {
    let end = d.len();
    let mut i = 0;
    while i < end {
        if d[i] == 2 {
            d[i] = 0;
        } else if d[i] != 0 {
            let mut provisional = 0usize;
            let mut j = i;
            while j < end && d[j] != 0 {
                if d[j] == 2 {
                    provisional += 1;
                }
                j += 1;
            }
            while j > i && d[j - 1] == 2 {
                j -= 1;
                d[j] = 0;
                provisional -= 1;
            }
            let length = j - i;
            if (length >> 2) < provisional {
                for x in &mut d[i..j] {
                    if *x == 2 {
                        *x = 0;
                    }
                }
            } else {
                let minimum: usize = if length < 4 {
                    2
                } else {
                    (1 << ((floor_log2(length) >> 1) - 1)) + 1
                };
                // Cancel subruns of `minimum` or more provisionals.
                let mut consec = 0usize;
                let mut k = 0usize;
                while k < length {
                    if d[i + k] != 2 {
                        consec = 0;
                    } else {
                        consec += 1;
                        if consec == minimum {
                            // Back up to the start of the subrun; the loop's
                            // step lands on it again.
                            k = k + 1 - consec;
                            continue;
                        } else if consec > minimum {
                            d[i + k] = 0;
                        }
                    }
                    k += 1;
                }
                let run = &mut d[i..i + length];
                cancel_provisionals_from_end(run.iter_mut());
                cancel_provisionals_from_end(run.iter_mut().rev());
                i += length - 1;
            }
        }
        i += 1;
    }
}

/// From one end of a run of discards (`run` yields its flags from that end), cancels
/// provisional discards until three real discards in a row, or a real one at least 8
/// lines in.
fn cancel_provisionals_from_end<'a>(run: impl Iterator<Item = &'a mut u8>) {
    let mut consec = 0;
    for (k, x) in run.enumerate() {
        if k >= 8 && *x == 1 {
            break;
        }
        match *x {
            2 => {
                consec = 0;
                *x = 0;
            }
            0 => consec = 0,
            _ => consec += 1,
        }
        if consec == 3 {
            break;
        }
    }
}

/// Myers' linear-space search as GNU diff runs it (`compareseq`/`diag`
/// without `--minimal` or `-H`), marking unmatched lines as changed.
fn compare_seq(u: &Undiscarded, changed: &mut [Vec<bool>; 2]) {
    let (nx, ny) = (u.x.len(), u.y.len());
    let diags = nx + ny + 3;
    let too_expensive = (1usize << ((floor_log2(diags) >> 1) + 1)).max(4096);
    let mut search = Search {
        xv: &u.x,
        yv: &u.y,
        fd: vec![0; diags],
        bd: vec![0; diags],
        off: to_isize(ny) + 1,
        too_expensive,
    };
    let mut stack = vec![(0usize, nx, 0usize, ny, false)];
    while let Some((mut xoff, mut xlim, mut yoff, mut ylim, minimal)) = stack.pop() {
        while xoff < xlim && yoff < ylim && u.x[xoff] == u.y[yoff] {
            xoff += 1;
            yoff += 1;
        }
        while xoff < xlim && yoff < ylim && u.x[xlim - 1] == u.y[ylim - 1] {
            xlim -= 1;
            ylim -= 1;
        }
        if xoff == xlim {
            for y in yoff..ylim {
                changed[1][u.yreal[y] + 1] = true;
            }
        } else if yoff == ylim {
            for x in xoff..xlim {
                changed[0][u.xreal[x] + 1] = true;
            }
        } else {
            let part = search.diag(xoff, xlim, yoff, ylim, minimal);
            stack.push((part.xmid, xlim, part.ymid, ylim, part.hi_minimal));
            stack.push((xoff, part.xmid, yoff, part.ymid, part.lo_minimal));
        }
    }
}

fn to_isize(n: usize) -> isize {
    isize::try_from(n).unwrap_or(isize::MAX)
}

fn to_usize(n: isize) -> usize {
    usize::try_from(n).unwrap_or(0)
}

struct Partition {
    xmid: usize,
    ymid: usize,
    lo_minimal: bool,
    hi_minimal: bool,
}

struct Search<'a> {
    xv: &'a [usize],
    yv: &'a [usize],
    /// Forward and backward furthest-x per diagonal, indexed `d + off`.
    fd: Vec<isize>,
    bd: Vec<isize>,
    off: isize,
    too_expensive: usize,
}

impl Search<'_> {
    // Indexes stay in range by construction (diagonals span
    // `-ny-1..=nx+1`); the accessors still avoid panicking.
    fn fd(&self, d: isize) -> isize {
        self.fd.get(to_usize(d + self.off)).copied().unwrap_or(-1)
    }
    fn bd(&self, d: isize) -> isize {
        self.bd
            .get(to_usize(d + self.off))
            .copied()
            .unwrap_or(isize::MAX)
    }
    fn set_fd(&mut self, d: isize, v: isize) {
        if let Some(slot) = self.fd.get_mut(to_usize(d + self.off)) {
            *slot = v;
        }
    }
    fn set_bd(&mut self, d: isize, v: isize) {
        if let Some(slot) = self.bd.get_mut(to_usize(d + self.off)) {
            *slot = v;
        }
    }
    fn eq(&self, x: isize, y: isize) -> bool {
        match (self.xv.get(to_usize(x)), self.yv.get(to_usize(y))) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
    }

    /// GNU `diag`: the midpoint of a shortest edit script, found by
    /// simultaneous forward and backward searches.
    fn diag(
        &mut self,
        xoff: usize,
        xlim: usize,
        yoff: usize,
        ylim: usize,
        find_minimal: bool,
    ) -> Partition {
        let (xoff, xlim, yoff, ylim) = (
            to_isize(xoff),
            to_isize(xlim),
            to_isize(yoff),
            to_isize(ylim),
        );
        let dmin = xoff - ylim;
        let dmax = xlim - yoff;
        let fmid = xoff - yoff;
        let bmid = xlim - ylim;
        let (mut fmin, mut fmax, mut bmin, mut bmax) = (fmid, fmid, bmid, bmid);
        let odd = (fmid - bmid) & 1 != 0;
        self.set_fd(fmid, xoff);
        self.set_bd(bmid, xlim);
        let mut c: usize = 1;
        loop {
            if fmin > dmin {
                fmin -= 1;
                self.set_fd(fmin - 1, -1);
            } else {
                fmin += 1;
            }
            if fmax < dmax {
                fmax += 1;
                self.set_fd(fmax + 1, -1);
            } else {
                fmax -= 1;
            }
            let mut d = fmax;
            while d >= fmin {
                let (tlo, thi) = (self.fd(d - 1), self.fd(d + 1));
                let x0 = if tlo < thi { thi } else { tlo + 1 };
                let (mut x, mut y) = (x0, x0 - d);
                while x < xlim && y < ylim && self.eq(x, y) {
                    x += 1;
                    y += 1;
                }
                self.set_fd(d, x);
                if odd && bmin <= d && d <= bmax && self.bd(d) <= x {
                    return Partition {
                        xmid: to_usize(x),
                        ymid: to_usize(y),
                        lo_minimal: true,
                        hi_minimal: true,
                    };
                }
                d -= 2;
            }
            if bmin > dmin {
                bmin -= 1;
                self.set_bd(bmin - 1, isize::MAX);
            } else {
                bmin += 1;
            }
            if bmax < dmax {
                bmax += 1;
                self.set_bd(bmax + 1, isize::MAX);
            } else {
                bmax -= 1;
            }
            let mut d = bmax;
            while d >= bmin {
                let (tlo, thi) = (self.bd(d - 1), self.bd(d + 1));
                let x0 = if tlo < thi { tlo } else { thi - 1 };
                let (mut x, mut y) = (x0, x0 - d);
                while xoff < x && yoff < y && self.eq(x - 1, y - 1) {
                    x -= 1;
                    y -= 1;
                }
                self.set_bd(d, x);
                if !odd && fmin <= d && d <= fmax && x <= self.fd(d) {
                    return Partition {
                        xmid: to_usize(x),
                        ymid: to_usize(y),
                        lo_minimal: true,
                        hi_minimal: true,
                    };
                }
                d -= 2;
            }
            if !find_minimal && c >= self.too_expensive {
                return self.give_up(xoff, xlim, yoff, ylim, (fmin, fmax, bmin, bmax));
            }
            c += 1;
        }
    }

    /// GNU's TOO_EXPENSIVE cut-off: take the furthest-reaching diagonal.
    fn give_up(
        &self,
        xoff: isize,
        xlim: isize,
        yoff: isize,
        ylim: isize,
        bounds: (isize, isize, isize, isize),
    ) -> Partition {
        let (fmin, fmax, bmin, bmax) = bounds;
        let (mut fxybest, mut fxbest) = (-1, 0);
        let mut d = fmax;
        while d >= fmin {
            let mut x = self.fd(d).min(xlim);
            let mut y = x - d;
            if ylim < y {
                x = ylim + d;
                y = ylim;
            }
            if fxybest < x + y {
                fxybest = x + y;
                fxbest = x;
            }
            d -= 2;
        }
        let (mut bxybest, mut bxbest) = (isize::MAX, 0);
        let mut d = bmax;
        while d >= bmin {
            let mut x = self.bd(d).max(xoff);
            let mut y = x - d;
            if y < yoff {
                x = yoff + d;
                y = yoff;
            }
            if x + y < bxybest {
                bxybest = x + y;
                bxbest = x;
            }
            d -= 2;
        }
        if (xlim + ylim) - bxybest < fxybest - (xoff + yoff) {
            Partition {
                xmid: to_usize(fxbest),
                ymid: to_usize(fxybest - fxbest),
                lo_minimal: true,
                hi_minimal: false,
            }
        } else {
            Partition {
                xmid: to_usize(bxbest),
                ymid: to_usize(bxybest - bxbest),
                lo_minimal: false,
                hi_minimal: true,
            }
        }
    }
}

/// GNU `shift_boundaries`: slide each run of changed lines over identical
/// neighbours so that it merges with other runs, ends as late as possible,
/// or lines up with a change in the other file.
fn shift_boundaries(eq0: &[usize], eq1: &[usize], changed: &mut [Vec<bool>; 2]) {
    for (f, eq) in [eq0, eq1].into_iter().enumerate() {
        let (first, second) = changed.split_at_mut(1);
        let (ch, other) = if f == 0 {
            (&mut first[0], &second[0])
        } else {
            (&mut second[0], &first[0])
        };
        let i_end = to_isize(eq.len());
        // Flags are stored at index + 1, with a false sentinel at each end.
        let c = |v: &[bool], k: isize| v.get(to_usize(k + 1)).copied().unwrap_or(false);
        let set = |v: &mut [bool], k: isize, value: bool| {
            if let Some(slot) = v.get_mut(to_usize(k + 1)) {
                *slot = value;
            }
        };
        let e = |k: isize| eq[to_usize(k)];
        let (mut i, mut j): (isize, isize) = (0, 0);
        loop {
            while i < i_end && !c(ch, i) {
                while c(other, j) {
                    j += 1;
                }
                j += 1;
                i += 1;
            }
            if i == i_end {
                break;
            }
            let mut start = i;
            i += 1;
            while c(ch, i) {
                i += 1;
            }
            while c(other, j) {
                j += 1;
            }
            let mut corresponding;
            loop {
                let runlength = i - start;
                while start != 0 && e(start - 1) == e(i - 1) {
                    start -= 1;
                    set(ch, start, true);
                    i -= 1;
                    set(ch, i, false);
                    while c(ch, start - 1) {
                        start -= 1;
                    }
                    j -= 1;
                    while c(other, j) {
                        j -= 1;
                    }
                }
                corresponding = if c(other, j - 1) { i } else { i_end };
                while i != i_end && e(start) == e(i) {
                    set(ch, start, false);
                    start += 1;
                    set(ch, i, true);
                    i += 1;
                    while c(ch, i) {
                        i += 1;
                    }
                    j += 1;
                    while c(other, j) {
                        j += 1;
                        corresponding = i;
                    }
                }
                if runlength == i - start {
                    break;
                }
            }
            while corresponding < i {
                start -= 1;
                set(ch, start, true);
                i -= 1;
                set(ch, i, false);
                j -= 1;
                while c(other, j) {
                    j -= 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::text::tests::{GNU_DIFF, XorShift, assert_same_as_gnu, random_text};
    use crate::text::{normal_diff, unified_diff};

    // --- diff: expectations produced by GNU diffutils 3.8

    #[test]
    fn hunks_placed_where_gnu_diff_places_them() {
        // Plain Myers diffs differ from GNU diff on each of these.
        assert_eq!(
            normal_diff("c\nc\na\n", "b\na\nc\na\nc\n"),
            "1c1,2\n< c\n---\n> b\n> a\n3a5\n> c\n"
        );
        assert_eq!(
            normal_diff("a\na\nc\nb\n", "c\nc\nb\na\na\n"),
            "1,2c1\n< a\n< a\n---\n> c\n4a4,5\n> a\n> a\n"
        );
        assert_eq!(
            unified_diff("c\nc\na\n", "b\na\nc\na\nc\n", "live", "target"),
            "--- live\n+++ target\n@@ -1,3 +1,5 @@\n-c\n+b\n+a\n c\n a\n+c\n"
        );
    }

    #[test]
    fn random_line_sets_match_gnu_diff() {
        let mut r = XorShift(0x2545_F491_4F6C_DD1D);
        let alphabet = ["a", "b", "c", "", "  name: x", "- name: y"];
        for i in 0..300 {
            let old = random_text(&mut r, &alphabet, 14);
            let new = random_text(&mut r, &alphabet, 14);
            if !assert_same_as_gnu(&old, &new, &format!("rand{i}")) {
                eprintln!("skipped: {GNU_DIFF} not found");
                return;
            }
        }
    }
}
