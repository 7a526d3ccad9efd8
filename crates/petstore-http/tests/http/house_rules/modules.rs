//! A crate's modules as the compiler places them, and the top-level modules each one's code
//! names, read with `syn`: a text scan missed a grouped `use`, a path through `super::`, code
//! after a test-only item and a file that `#[path]` compiles inside another module.
//!
//! How it reads:
//! - **Modules** start at `lib.rs` and follow its `mod` items to their files (`foo.rs` or
//!   `foo/mod.rs`, or what `#[path]` names), inline `mod` blocks included. A module belongs to
//!   the top-level module it is compiled inside, wherever its file sits.
//! - **Tests aside**: an item, impl item or trait item under `#[cfg(test)]` (or `cfg(all(test,
//!   …))`) is skipped wherever it stands, and so is a module declared that way.
//! - **Names**: every `use` tree (groups, renames and globs) and every path of the code,
//!   macro arguments included, that starts at `crate`, `self` or `super`. A name through the
//!   crate root (`crate::Item`) counts for the module `lib.rs` re-exports it from.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::punctuated::Punctuated;
use syn::visit::Visit;

/// Each top-level module of a crate and the other top-level modules its code names.
pub(super) type ImportGraph = BTreeMap<String, BTreeSet<String>>;

/// The import graph of the crate whose sources are in `src` (from its `lib.rs`).
pub(super) fn imports(src: &Path) -> ImportGraph {
    let root = parse(&src.join("lib.rs"));
    let top_level: BTreeSet<String> = root
        .items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Mod(module) if !test_only(&module.attrs) => Some(module.ident.to_string()),
            _ => None,
        })
        .collect();
    let crate_root = CrateRoot {
        re_exports: re_exports(&root, &top_level),
        top_level,
    };
    let mut named = Vec::new();
    let place = Place {
        children: src.to_path_buf(),
        path_base: src.to_path_buf(),
    };
    read_module(&root.items, &place, &[], &mut named);

    let mut graph: ImportGraph = crate_root
        .top_level
        .iter()
        .map(|module| (module.clone(), BTreeSet::new()))
        .collect();
    for (module, path) in named {
        let Some(from) = module.first() else {
            continue; // `lib.rs` itself: the root names every module by declaring it.
        };
        if let Some(to) = crate_root.top_level_of(&module, &path)
            && to != *from
        {
            graph.entry(from.clone()).or_default().insert(to);
        }
    }
    graph
}

/// The item names `lib.rs` re-exports (`pub use b::{Item, …}`), each with the top-level module
/// it comes from.
pub(super) fn re_exports(
    root: &syn::File,
    top_level: &BTreeSet<String>,
) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for item in &root.items {
        let syn::Item::Use(used) = item else { continue };
        if matches!(used.vis, syn::Visibility::Inherited) || test_only(&used.attrs) {
            continue;
        }
        let mut leaves = Vec::new();
        use_tree(&mut Vec::new(), &used.tree, &mut leaves);
        for (path, name) in leaves {
            // In `lib.rs`, `b::Item` starts at the root as `crate::b::Item` does.
            let path = absolute(&[], &path).unwrap_or(path);
            if let (Some(module), Some(name)) = (path.first(), name)
                && top_level.contains(module)
            {
                names.insert(name, module.clone());
            }
        }
    }
    names
}

struct CrateRoot {
    top_level: BTreeSet<String>,
    re_exports: BTreeMap<String, String>,
}

impl CrateRoot {
    /// The top-level module that `path`, named in `module`, reaches, if it reaches one.
    fn top_level_of(&self, module: &[String], path: &[String]) -> Option<String> {
        let first = absolute(module, path)?.into_iter().next()?;
        if self.top_level.contains(&first) {
            Some(first)
        } else {
            self.re_exports.get(&first).cloned()
        }
    }
}

/// Where the files of a module's `mod` items are: `children` for `foo.rs` and `foo/mod.rs`,
/// `path_base` for what a `#[path]` names.
struct Place {
    children: PathBuf,
    path_base: PathBuf,
}

fn parse(file: &Path) -> syn::File {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
    syn::parse_file(&text).unwrap_or_else(|e| panic!("{file:?} does not parse: {e}"))
}

/// Reads the items of `module` (at `place`) and of every module under it, adding each path
/// their code names to `named`, with the module that names it.
fn read_module(
    items: &[syn::Item],
    place: &Place,
    module: &[String],
    named: &mut Vec<(Vec<String>, Vec<String>)>,
) {
    let mut names = Names::default();
    for item in items {
        match item {
            syn::Item::Mod(child) if !test_only(&child.attrs) => {
                let name = child.ident.to_string();
                let mut path = module.to_vec();
                path.push(name.clone());
                if let Some((_, items)) = &child.content {
                    // An inline block: its own `mod` items and `#[path]`s sit one folder down.
                    let inner = Place {
                        children: place.children.join(&name),
                        path_base: place.children.join(&name),
                    };
                    read_module(items, &inner, &path, named);
                } else {
                    let (file, inner) = module_file(child, place);
                    read_module(&parse(&file).items, &inner, &path, named);
                }
            }
            syn::Item::Mod(_) => {}
            other => names.visit_item(other),
        }
    }
    named.extend(names.found.into_iter().map(|path| (module.to_vec(), path)));
}

/// The file of `mod name;` declared at `place`, and where that file's own modules are.
fn module_file(declared: &syn::ItemMod, place: &Place) -> (PathBuf, Place) {
    let in_folder = |file: PathBuf| {
        let folder = file.parent().map(Path::to_path_buf).unwrap_or_default();
        let place = Place {
            children: folder.clone(),
            path_base: folder,
        };
        (file, place)
    };
    let named_by_path = declared.attrs.iter().find_map(|attr| match &attr.meta {
        syn::Meta::NameValue(value) if value.path.is_ident("path") => match &value.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(path),
                ..
            }) => Some(path.value()),
            _ => None,
        },
        _ => None,
    });
    // A file `#[path]` names holds its modules beside it, as a `mod.rs` does.
    if let Some(path) = named_by_path {
        return in_folder(place.path_base.join(path));
    }
    let name = declared.ident.to_string();
    let own_folder = place.children.join(&name).join("mod.rs");
    if own_folder.is_file() {
        return in_folder(own_folder);
    }
    let file = place.children.join(format!("{name}.rs"));
    let inner = Place {
        children: place.children.join(&name),
        path_base: place.children.clone(),
    };
    (file, inner)
}

/// Whether `attrs` compile their item only for tests: `cfg(test)`, or `cfg(all(…))` with
/// `test` among its conditions. (`cfg(any(test, feature = …))` is production code too.)
pub(super) fn test_only(attrs: &[syn::Attribute]) -> bool {
    fn needs_test(meta: &syn::Meta) -> bool {
        match meta {
            syn::Meta::Path(path) => path.is_ident("test"),
            syn::Meta::List(list) if list.path.is_ident("all") => list
                .parse_args_with(Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated)
                .is_ok_and(|all| all.iter().any(needs_test)),
            _ => false,
        }
    }
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg") && attr.parse_args::<syn::Meta>().is_ok_and(|c| needs_test(&c))
    })
}

/// The paths that code names, as written (`["super", "b", "Item"]`).
#[derive(Default)]
struct Names {
    found: Vec<Vec<String>>,
}

impl<'ast> Visit<'ast> for Names {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        match item {
            _ if test_only(item_attrs(item)) => {}
            syn::Item::Use(used) if used.leading_colon.is_none() => {
                let mut leaves = Vec::new();
                use_tree(&mut Vec::new(), &used.tree, &mut leaves);
                self.found.extend(leaves.into_iter().map(|(path, _)| path));
            }
            syn::Item::Use(_) => {} // `use ::other_crate::…`
            _ => syn::visit::visit_item(self, item),
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = match item {
            syn::ImplItem::Const(c) => &c.attrs,
            syn::ImplItem::Fn(f) => &f.attrs,
            syn::ImplItem::Type(t) => &t.attrs,
            syn::ImplItem::Macro(m) => &m.attrs,
            _ => return syn::visit::visit_impl_item(self, item),
        };
        if !test_only(attrs) {
            syn::visit::visit_impl_item(self, item);
        }
    }

    fn visit_trait_item(&mut self, item: &'ast syn::TraitItem) {
        let attrs = match item {
            syn::TraitItem::Const(c) => &c.attrs,
            syn::TraitItem::Fn(f) => &f.attrs,
            syn::TraitItem::Type(t) => &t.attrs,
            syn::TraitItem::Macro(m) => &m.attrs,
            _ => return syn::visit::visit_trait_item(self, item),
        };
        if !test_only(attrs) {
            syn::visit::visit_trait_item(self, item);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            self.found
                .push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, path);
    }

    /// A macro's arguments are tokens, not a syntax tree: the paths in them are read off the
    /// tokens (`crate :: a :: f`, `super :: b`).
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        paths_in_tokens(mac.tokens.clone(), &mut self.found);
        syn::visit::visit_macro(self, mac);
    }
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::ExternCrate(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::ForeignMod(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::TraitAlias(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// Every path a `use` tree brings in, each with the name it is known by (none for a glob).
fn use_tree(
    prefix: &mut Vec<String>,
    tree: &syn::UseTree,
    leaves: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let mut leaf = |last: Option<String>, name: Option<String>| {
        let mut path = prefix.clone();
        path.extend(last);
        leaves.push((path, name));
    };
    match tree {
        syn::UseTree::Path(step) => {
            prefix.push(step.ident.to_string());
            use_tree(prefix, &step.tree, leaves);
            prefix.pop();
        }
        // `use crate::a::{self, X}`: `self` is `a` itself.
        syn::UseTree::Name(name) if name.ident == "self" => leaf(None, prefix.last().cloned()),
        syn::UseTree::Name(name) => {
            leaf(Some(name.ident.to_string()), Some(name.ident.to_string()))
        }
        syn::UseTree::Rename(rename) => {
            leaf(
                Some(rename.ident.to_string()),
                Some(rename.rename.to_string()),
            );
        }
        syn::UseTree::Glob(_) => leaf(None, None),
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                use_tree(prefix, tree, leaves);
            }
        }
    }
}

/// The paths that start at `crate`, `self` or `super` in a macro's tokens.
fn paths_in_tokens(tokens: TokenStream, found: &mut Vec<Vec<String>>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut at = 0;
    while at < tokens.len() {
        match &tokens[at] {
            TokenTree::Group(group) => paths_in_tokens(group.stream(), found),
            TokenTree::Ident(start)
                if ["crate", "self", "super"].contains(&&*start.to_string()) =>
            {
                let mut path = vec![start.to_string()];
                // `::` is two `:` punctuation tokens, then the next segment.
                while let (
                    Some(TokenTree::Punct(a)),
                    Some(TokenTree::Punct(b)),
                    Some(TokenTree::Ident(next)),
                ) = (tokens.get(at + 1), tokens.get(at + 2), tokens.get(at + 3))
                {
                    if a.as_char() != ':' || b.as_char() != ':' {
                        break;
                    }
                    path.push(next.to_string());
                    at += 3;
                }
                found.push(path);
            }
            _ => {}
        }
        at += 1;
    }
}

/// `path`, named in `module`, from the crate root; `None` for a path that does not start at
/// `crate`, `self` or `super` (another crate, or a name in scope).
pub(super) fn absolute(module: &[String], path: &[String]) -> Option<Vec<String>> {
    match path.first().map(String::as_str)? {
        "crate" => Some(path[1..].to_vec()),
        "self" => Some([module, &path[1..]].concat()),
        "super" => {
            let up = path.iter().take_while(|s| *s == "super").count();
            let kept = module.len().checked_sub(up)?;
            Some([&module[..kept], &path[up..]].concat())
        }
        _ => None,
    }
}
