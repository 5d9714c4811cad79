//! Name reference repair: after renames (prefix/suffix, hash suffix, namespace), fields
//! that hold another object's name are updated the way kustomize's nameReference
//! transformer does it — candidates are matched by *previous* names, narrowed by kind,
//! roleRef, namespace and finally by prefix/suffix history (loosely, then strictly).

use super::fieldspec::{Leaf, walk};
use super::resource::{FastMap, NameTable, Res, ResId};
use super::tree::{Node, Org};

/// The candidates, which of them ever had a given name, and which of them started in a
/// given namespace: lookups cost the matches, not all objects.
struct Index<'a> {
    cands: &'a [Cand],
    /// Candidates by their previous names.
    by_prev_name: NameTable,
    /// Candidates by the effective namespace of their original id (namespaced ones).
    by_org_ns: FastMap<&'a str, Vec<usize>>,
}

/// kustomize's SubsetThatCouldBeReferencedByResource, as a membership test: the
/// candidates a referrer in `ns` (all of them for a cluster-scoped referrer, plus those in
/// the namespaces of a RoleBinding's ServiceAccount subjects) may refer to.
struct Subset<'a> {
    referrer: &'a ResId,
    rb_namespaces: Vec<String>,
}

impl Subset<'_> {
    fn contains(&self, c: &Cand) -> bool {
        self.referrer.is_cluster_scoped()
            || c.cur.is_cluster_scoped()
            || c.cur.ns_equals(self.referrer)
            || self.rb_namespaces.iter().any(|n| *n == c.cur.namespace)
    }
}

/// What the repair needs to know about a possible referral (and, for the resource at the
/// same index, about it as a referrer). `prev`, `prefixes` and `suffixes` are moved out of
/// the resource for the repair (which changes only name references) and moved back after.
struct Cand {
    /// The current id; its namespace as written (empty when none).
    cur: ResId,
    prev: Vec<ResId>,
    name_org: Org,
    ns_org: Org,
    prefixes: Vec<String>,
    suffixes: Vec<String>,
}

impl Cand {
    /// The original id: the first previous one, or the current one.
    fn org_id(&self) -> &ResId {
        self.prev.first().unwrap_or(&self.cur)
    }
}

struct Referrer<'a> {
    id: &'a ResId,
    prefixes: &'a [String],
    suffixes: &'a [String],
    role_ref: Option<(String, String)>,
}

pub fn fix(ra: &mut [Res], table: &[super::fieldspec::NameRef]) -> Result<(), String> {
    // kustomize reads every RoleBinding's ServiceAccount subjects (for the namespaces its
    // references may reach) whether or not anything was renamed, and refuses one whose
    // `namespace` is there but not a string (`namespace:` left empty is null).
    for r in ra.iter() {
        let org = r.org_id_ref();
        if org.kind == "RoleBinding" && org.group == "rbac.authorization.k8s.io" {
            role_binding_namespaces(r, &r.cur_id())?;
        }
    }
    // Nothing was renamed: nothing to repair.
    if ra.iter().all(|r| r.prev.is_empty()) {
        return Ok(());
    }
    // On every core: the ids are copied, and the lists moved, of every resource.
    let cands: Vec<Cand> = plumb_core::parallel::map_mut(ra, |r| Cand {
        cur: r.cur_id(),
        prev: std::mem::take(&mut r.prev),
        name_org: r
            .node
            .path(&["metadata", "name"])
            .and_then(Node::org)
            .unwrap_or(Org::NONE),
        ns_org: r
            .node
            .path(&["metadata", "namespace"])
            .and_then(Node::org)
            .unwrap_or(Org::NONE),
        prefixes: std::mem::take(&mut r.prefixes),
        suffixes: std::mem::take(&mut r.suffixes),
    });
    let result = repair(ra, &cands, table);
    for (r, c) in ra.iter_mut().zip(cands) {
        r.prev = c.prev;
        r.prefixes = c.prefixes;
        r.suffixes = c.suffixes;
    }
    result
}

/// Repairs the name references of every resource; `cands[i]` describes `ra[i]`.
fn repair(
    ra: &mut [Res],
    cands: &[Cand],
    table: &[super::fieldspec::NameRef],
) -> Result<(), String> {
    let mut by_prev_name = NameTable::with_capacity(cands.len());
    for (i, c) in cands.iter().enumerate() {
        c.prev.iter().for_each(|p| by_prev_name.add(&p.name, i));
    }
    let mut by_org_ns: FastMap<&str, Vec<usize>> = FastMap::default();
    for (i, c) in cands.iter().enumerate() {
        if !c.org_id().is_cluster_scoped() {
            by_org_ns
                .entry(c.org_id().effective_namespace())
                .or_default()
                .push(i);
        }
    }
    let ix = Index {
        cands,
        by_prev_name,
        by_org_ns,
    };
    // The (name reference, referrer field spec) pairs that select a group/version/kind,
    // in table order: worked out once per kind, not once per object. The referrer's field
    // specs are chosen by its original kind (with its current apiVersion), as kustomize picks
    // them by the original id: an object whose kind a patch changed keeps the references of
    // its first kind.
    let (specs_of, spec_lists) = super::fieldspec::by_kind(
        cands.iter().map(|c| {
            let id = &c.cur;
            let org_kind = c.prev.first().map_or(id.kind.as_str(), |p| p.kind.as_str());
            (id.group.as_str(), id.version.as_str(), org_kind)
        }),
        |sel| {
            let mut v = Vec::new();
            for (n, nr) in table.iter().enumerate() {
                for (f, fs) in nr.referrers.iter().enumerate() {
                    if fs.selects(sel) {
                        v.push((n, f));
                    }
                }
            }
            v
        },
    );
    // Each referrer on its own (only its own fields change), on every core.
    plumb_core::parallel::try_each_mut(ra, |i, r| {
        let c = &cands[i];
        let id = &c.cur;
        let subset = Subset {
            referrer: id,
            rb_namespaces: role_binding_namespaces(r, id)?,
        };
        let role_ref = r.node.get("roleRef").and_then(|rr| {
            Some((
                rr.get("apiGroup")?.as_str()?.to_string(),
                rr.get("kind")?.as_str()?.to_string(),
            ))
        });
        let referrer = Referrer {
            id,
            prefixes: &c.prefixes,
            suffixes: &c.suffixes,
            role_ref,
        };
        for &(n, f) in &spec_lists[specs_of[i]] {
            let nr = &table[n];
            let fs = &nr.referrers[f];
            let target = (nr.group.as_str(), nr.version.as_str(), nr.kind.as_str());
            let is_role_ref = fs.path.ends_with("roleRef/name");
            walk(&mut r.node, fs.segments(), false, Leaf::Scalar, &mut |n| {
                set(
                    n,
                    &Setting {
                        referrer: &referrer,
                        ix: &ix,
                        subset: &subset,
                        target,
                        is_role_ref,
                    },
                )
            })
            .map_err(|m| {
                format!(
                    "updating name reference in '{}' field of '{}': {m}",
                    fs.path,
                    id.display()
                )
            })?;
        }
        Ok(())
    })
}

/// The namespaces of a RoleBinding's ServiceAccount subjects; an error for a subject whose
/// `namespace` is present but not a string.
fn role_binding_namespaces(r: &Res, id: &ResId) -> Result<Vec<String>, String> {
    let mut rb_namespaces = Vec::new();
    if id.kind == "RoleBinding"
        && !id.is_cluster_scoped()
        && let Some(Node::Seq(subjects)) = r.node.get("subjects")
    {
        for (i, s) in subjects.iter().enumerate() {
            if s.get("kind").and_then(Node::as_str) != Some("ServiceAccount") {
                continue;
            }
            match s.get("namespace") {
                None => {}
                Some(ns) => match ns.as_str() {
                    Some(ns) => rb_namespaces.push(ns.to_string()),
                    None => {
                        return Err(format!(
                            "invalid input: namespace is blank for resource {} (subjects[{i}].namespace is not a string)",
                            id.display()
                        ));
                    }
                },
            }
        }
    }
    Ok(rb_namespaces)
}

/// What one referrer field's name references are set from: the referrer, the candidates,
/// the subset of them it may refer to, the referred group/version/kind, and whether the
/// field is a `roleRef`.
struct Setting<'a> {
    referrer: &'a Referrer<'a>,
    ix: &'a Index<'a>,
    subset: &'a Subset<'a>,
    target: (&'a str, &'a str, &'a str),
    is_role_ref: bool,
}

fn set(n: &mut Node, s: &Setting) -> Result<(), String> {
    match n {
        Node::Scalar(..) => set_scalar(n, s),
        Node::Map(_) => set_mapping(n, s),
        Node::Seq(items) => {
            for it in items.iter_mut() {
                match it {
                    Node::Map(_) => set_mapping(it, s)?,
                    Node::Scalar(..) => set_scalar(it, s)?,
                    Node::Seq(_) => {}
                }
            }
            Ok(())
        }
    }
}

fn set_scalar(n: &mut Node, s: &Setting) -> Result<(), String> {
    let Some(old) = n.as_str().map(String::from) else {
        return Ok(());
    };
    let pool = s.ix.named(&old, s.subset);
    let Some(i) = select(&old, pool, s, false)? else {
        return Ok(());
    };
    let c = &s.ix.cands[i];
    if c.cur.name != old {
        *n = Node::str(c.cur.name.clone(), c.name_org);
    }
    Ok(())
}

fn set_mapping(n: &mut Node, s: &Setting) -> Result<(), String> {
    let Some(old) = n.get("name").and_then(|x| x.scalar_text()) else {
        return Err("path config error; no 'name' field in node".into());
    };
    let Setting { ix, subset, .. } = *s;
    let cands = ix.cands;
    let named = ix.named(&old, subset);
    let pool: Vec<usize> = match n.get("namespace").and_then(|x| x.scalar_text()) {
        None => named,
        Some(ns) => {
            // kustomize groups the whole subset by namespace first, then matches names.
            let in_org = |i: usize| {
                !cands[i].org_id().is_cluster_scoped()
                    && cands[i].org_id().effective_namespace() == ns
            };
            let in_cur = |i: usize| {
                !cands[i].cur.is_cluster_scoped() && cands[i].cur.effective_namespace() == ns
            };
            let any_org = ix
                .by_org_ns
                .get(ns.as_str())
                .is_some_and(|v| v.iter().any(|&i| subset.contains(&cands[i])));
            if any_org {
                named.into_iter().filter(|&i| in_org(i)).collect()
            } else {
                named.into_iter().filter(|&i| in_cur(i)).collect()
            }
        }
    };
    let Some(i) = select(&old, pool, s, true)? else {
        return Ok(());
    };
    let c = &cands[i];
    if c.cur.name == old && c.cur.namespace.is_empty() {
        return Ok(());
    }
    if let Some(m) = n.as_map_mut() {
        m.insert("name", Node::str(c.cur.name.clone(), c.name_org));
        if !c.cur.namespace.is_empty() {
            m.insert("namespace", Node::str(c.cur.namespace.clone(), c.ns_org));
        }
    }
    Ok(())
}

impl Index<'_> {
    /// Candidates in the subset that once had `name`, in order.
    fn named(&self, name: &str, subset: &Subset) -> Vec<usize> {
        let mut v = self.by_prev_name.get(name);
        v.retain(|&i| {
            let c = &self.cands[i];
            c.prev.iter().any(|p| p.name == name) && subset.contains(c)
        });
        v
    }
}

/// kustomize's selectReferral.
fn select(
    old: &str,
    mut pool: Vec<usize>,
    s: &Setting,
    with_namespace: bool,
) -> Result<Option<usize>, String> {
    let Setting {
        referrer,
        target,
        is_role_ref,
        ..
    } = *s;
    let cands = s.ix.cands;
    pool.retain(|&i| cands[i].prev.iter().any(|p| p.name == old));
    pool.retain(|&i| {
        cands[i]
            .prev
            .iter()
            .any(|p| p.gvk_selected(target.0, target.1, target.2))
    });
    if is_role_ref && let Some((g, k)) = &referrer.role_ref {
        pool.retain(|&i| cands[i].prev.iter().any(|p| p.gvk_selected(g, "", k)));
    }
    if !referrer.id.is_cluster_scoped() {
        pool.retain(|&i| {
            let c = &cands[i].cur;
            c.is_cluster_scoped() || c.kind == "ServiceAccount" || referrer.id.ns_equals(c)
        });
    }
    if pool.len() == 1 {
        return Ok(Some(pool[0]));
    }
    // First a loose sieve (no prefixes, or no suffixes, on either side match anything),
    // then, if that leaves several, a strict one.
    pool.retain(|&i| affixes_match(&cands[i], referrer, true));
    if pool.len() > 1 {
        pool.retain(|&i| affixes_match(&cands[i], referrer, false));
    }
    match pool.len() {
        0 => Ok(None),
        1 => Ok(Some(pool[0])),
        _ => {
            let first = &cands[pool[0]].cur;
            let same = pool.iter().all(|&i| {
                let c = &cands[i].cur;
                c.name == first.name && (!with_namespace || c.namespace == first.namespace)
            });
            if same {
                Ok(Some(pool[0]))
            } else {
                let ids: Vec<String> = pool.iter().map(|&i| cands[i].cur.display()).collect();
                Err(format!(
                    " found multiple possible referrals: {}",
                    ids.join(", ")
                ))
            }
        }
    }
}

/// kustomize's PrefixesSuffixesEquals: the prefixes, and the suffixes, of a candidate and
/// a referrer end the same way (the shorter list is the end of the longer; an empty list
/// matches only an empty one, or anything when `allow_empty`).
fn affixes_match(c: &Cand, r: &Referrer, allow_empty: bool) -> bool {
    let same = |a: &[String], b: &[String]| {
        (allow_empty && (a.is_empty() || b.is_empty())) || same_ending(a, b)
    };
    same(&c.prefixes, r.prefixes) && same(&c.suffixes, r.suffixes)
}

/// Whether the shorter of two lists is the end of the longer (two empty lists are; an
/// empty and a non-empty one are not).
fn same_ending(a: &[String], b: &[String]) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.is_empty() {
        return long.is_empty();
    }
    long.ends_with(short)
}
