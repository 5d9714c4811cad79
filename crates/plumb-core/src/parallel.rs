//! Order-preserving data parallelism over a slice, on rayon's pool.
//!
//! The one fan-out over cores in plumb: [`map_coarse`] for a few items of much work each
//! (files, directories); [`map`], [`map_owned`], [`map_mut`], [`try_each_mut`] and
//! [`try_filter_map_with`] for many items of little work each (objects: kustomize's
//! per-resource transformers, converting, printing and comparing rendered objects, the
//! documents of one YAML stream). One pool for the process, rather than threads
//! started for each call: the same threads (and their allocator heaps, which reuse what an
//! earlier step freed) serve every step, and work is split finer than one chunk per core.
//! `plumb render` at 2,000 resources: 0.85-0.87x the wall time, at 20,000 0.90x (whole
//! processes, paired in turn).
//!
//! Fewer than [`SERIAL_BELOW`] small items run on the calling thread: handing them to the
//! pool (a wake-up and a wait on another thread) costs more than it saves, and where such
//! calls are many (the controller, refreshing apps of a few dozen objects), its workers
//! already run apps side by side.

/// Below this many items, [`map`], [`map_owned`], [`map_mut`], [`try_each_mut`] and
/// [`try_filter_map_with`] run on the calling thread.
pub const SERIAL_BELOW: usize = 64;

/// Maps `f` over `items` on every core, keeping order: for a few items of much work each
/// (a file to parse), however few. A single item runs on the calling thread: there is
/// nothing to share, and handing it to the pool only adds a wake-up and a wait.
pub fn map_coarse<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    use rayon::prelude::*;
    if items.len() < 2 {
        return items.iter().map(&f).collect();
    }
    items.par_iter().map(&f).collect()
}

/// Maps `f` over `items` on every core, keeping order (on the calling thread below
/// [`SERIAL_BELOW`] items).
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if items.len() < SERIAL_BELOW {
        return items.iter().map(&f).collect();
    }
    map_coarse(items, f)
}

/// Like [`map`], but consumes `items`, so `f` can move out of each element (and its
/// memory is released as soon as `f` is done with it).
pub fn map_owned<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    use rayon::prelude::*;
    if items.len() < SERIAL_BELOW {
        return items.into_iter().map(&f).collect();
    }
    items.into_par_iter().map(&f).collect()
}

/// Maps `f` over mutable references to `items` on every core, keeping order (on the calling
/// thread below [`SERIAL_BELOW`] items): for a step that takes something out of each item
/// and reads the rest.
pub fn map_mut<T: Send, R: Send>(items: &mut [T], f: impl Fn(&mut T) -> R + Sync) -> Vec<R> {
    use rayon::prelude::*;
    if items.len() < SERIAL_BELOW {
        return items.iter_mut().map(&f).collect();
    }
    items.par_iter_mut().map(&f).collect()
}

/// Calls `f` with the index and a mutable reference of every item, on every core: for a
/// step that changes each item on its own (a kustomize transformer on each resource).
/// Returns the error of the first item, in order, that fails; the others may have been
/// changed meanwhile, as a failed step's items are not used.
pub fn try_each_mut<T: Send, E: Send>(
    items: &mut [T],
    f: impl Fn(usize, &mut T) -> Result<(), E> + Sync,
) -> Result<(), E> {
    use rayon::prelude::*;
    if items.len() < SERIAL_BELOW {
        return items
            .iter_mut()
            .enumerate()
            .try_for_each(|(i, item)| f(i, item));
    }
    let errors: Vec<E> = items
        .par_iter_mut()
        .enumerate()
        .filter_map(|(i, item)| f(i, item).err())
        .collect();
    errors.into_iter().next().map_or(Ok(()), Err)
}

/// Maps `f` over `items` on every core, keeping order, with a scratch state per run of items
/// on one thread (made by `init`, handed to `f` for each of them): `Some(Some(r))` keeps `r`,
/// `Some(None)` leaves the item out, and `None` from any item makes the whole `None`.
pub fn try_filter_map_with<T: Sync, S, R: Send>(
    items: &[T],
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, &T) -> Option<Option<R>> + Sync + Send,
) -> Option<Vec<R>> {
    use rayon::prelude::*;
    // `Some(None)` (left out) is dropped, `None` (failed) kept as the `None` that fails the
    // collection.
    let keep = |r: Option<Option<R>>| match r {
        None => Some(None),
        Some(None) => None,
        Some(Some(r)) => Some(Some(r)),
    };
    if items.len() < SERIAL_BELOW {
        let mut state = init();
        return items
            .iter()
            .filter_map(|t| keep(f(&mut state, t)))
            .collect();
    }
    items
        .par_iter()
        .map_init(init, |state, t| f(state, t))
        .filter_map(keep)
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn keeps_order() {
        let v: Vec<u32> = (0..1000).collect();
        assert_eq!(
            super::map(&v, |x| x * 2),
            v.iter().map(|x| x * 2).collect::<Vec<_>>()
        );
        assert!(super::map(&Vec::<u32>::new(), |x| *x).is_empty());
        let owned: Vec<String> = (0..1001).map(|i| i.to_string()).collect();
        assert_eq!(
            super::map_owned(owned.clone(), |s| s + "!"),
            owned.iter().map(|s| format!("{s}!")).collect::<Vec<_>>()
        );
        assert!(super::map_owned(Vec::<u32>::new(), |x| x).is_empty());
        // Taking out of each item: results in order, every item changed.
        let mut taken: Vec<String> = (0..1001).map(|i| i.to_string()).collect();
        assert_eq!(super::map_mut(&mut taken, std::mem::take), owned);
        assert!(taken.iter().all(String::is_empty));
        let mut few_taken: Vec<u32> = (0..10).collect();
        assert_eq!(
            super::map_mut(&mut few_taken, |x| std::mem::replace(x, 7)),
            (0..10).collect::<Vec<_>>()
        );
        assert!(few_taken.iter().all(|x| *x == 7));
        // Few items, on the calling thread: the same results.
        let few: Vec<u32> = (0..10).collect();
        assert_eq!(super::map(&few, |x| x + 1), (1..11).collect::<Vec<_>>());
        assert_eq!(
            super::map_coarse(&few, |x| x + 1),
            (1..11).collect::<Vec<_>>()
        );
        // One item (on the calling thread) and none.
        assert_eq!(super::map_coarse(&few[3..4], |x| x * 7), vec![21]);
        assert!(super::map_coarse(&few[..0], |x| *x).is_empty());
        assert_eq!(
            super::map_owned(few, |x| x + 1),
            (1..11).collect::<Vec<_>>()
        );
    }

    #[test]
    fn filter_map_with_keeps_order_leaves_out_and_fails() {
        for n in [10u32, 5000] {
            let v: Vec<u32> = (0..n).collect();
            // The state counts the items one run has seen: it is the worker's, never shared.
            let kept = super::try_filter_map_with(
                &v,
                || 0u32,
                |seen, x| {
                    *seen += 1;
                    assert!(*seen <= n);
                    Some((x % 3 != 0).then_some(x * 2))
                },
            );
            let want: Vec<u32> = v.iter().filter(|x| *x % 3 != 0).map(|x| x * 2).collect();
            assert_eq!(kept, Some(want));
            let failed =
                super::try_filter_map_with(&v, || (), |_, x| (*x != n - 1).then_some(Some(*x)));
            assert_eq!(failed, None);
        }
        assert_eq!(
            super::try_filter_map_with(&[] as &[u32], || (), |_, x| Some(Some(*x))),
            Some(vec![])
        );
    }

    #[test]
    fn each_changes_every_item_and_reports_the_first_error_in_order() {
        let mut v: Vec<usize> = vec![0; 5000];
        super::try_each_mut(&mut v, |i, x| {
            *x = i * 3;
            Ok::<(), String>(())
        })
        .unwrap();
        assert!(v.iter().enumerate().all(|(i, x)| *x == i * 3));
        let failed =
            super::try_each_mut(&mut v, |i, _| if i % 1000 == 999 { Err(i) } else { Ok(()) });
        assert_eq!(failed, Err(999));
        let mut few = vec![0usize; 10];
        let failed = super::try_each_mut(&mut few, |i, x| {
            *x = i;
            if i >= 3 { Err(i) } else { Ok(()) }
        });
        assert_eq!(failed, Err(3));
    }
}
