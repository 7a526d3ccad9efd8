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

/// Each module of a crate that has modules of its own, with the import graph between its
/// child modules: `[]` (the crate root) holds the top-level modules, `["console"]` the files of
/// `console/`.
pub(super) type ModuleGraphs = BTreeMap<Vec<String>, ImportGraph>;

/// Each child module of one module and the other child modules of it its code names.
pub(super) type ImportGraph = BTreeMap<String, BTreeSet<String>>;

/// The import graph between the top-level modules of the crate whose sources are in `src`.
pub(super) fn imports(src: &Path) -> ImportGraph {
    module_graphs(src).remove(&Vec::new()).unwrap_or_default()
}

/// The import graphs between the child modules of every module of the crate in `src`.
///
/// Code of module `a::x::y` naming an item of `a::z` makes the edge `x -> z` in the graph
/// of `a`: the first modules where the two paths part. Naming an item of an enclosing module
/// (`super::Item` of `a`'s own file) makes none, as the crate root's naming of its modules
/// makes none: a module's own file is above its children.
pub(super) fn module_graphs(src: &Path) -> ModuleGraphs {
    let root = parse(&src.join("lib.rs"));
    let mut crate_modules = Modules::default();
    let place = Place {
        children: src.to_path_buf(),
        path_base: src.to_path_buf(),
    };
    read_module(&root.items, &place, &[], &mut crate_modules);

    let mut graphs = ModuleGraphs::new();
    for module in &crate_modules.modules {
        let children = crate_modules
            .modules
            .iter()
            .filter(|child| child.len() == module.len() + 1 && child.starts_with(module))
            .map(|child| (child[module.len()].clone(), BTreeSet::new()));
        let graph: ImportGraph = children.collect();
        if !graph.is_empty() {
            graphs.insert(module.clone(), graph);
        }
    }
    for (from, path) in &crate_modules.named {
        let Some(to) = crate_modules.module_of(from, path) else {
            continue;
        };
        let parted = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
        if let (Some(from_child), Some(to_child)) = (from.get(parted), to.get(parted))
            && let Some(graph) = graphs.get_mut(&from[..parted])
        {
            graph
                .entry(from_child.clone())
                .or_default()
                .insert(to_child.clone());
        }
    }
    graphs
}

/// What reading a crate's files found.
#[derive(Default)]
struct Modules {
    /// Every module, as its path from the crate root (`[]` is the root).
    modules: BTreeSet<Vec<String>>,
    /// Each path the code names (as written), with the module that names it.
    named: Vec<(Vec<String>, Vec<String>)>,
    /// The names each module brings in with a `use` of its own file (`pub use b::Item`,
    /// `use super::b::Item`), each with the path it names, as written.
    uses: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
}

impl Modules {
    /// `path`, named in `module`, from the crate root: a path that starts at `crate`, `self`
    /// or `super`, or at one of `module`'s own child modules (`use session::Settings` in
    /// `console/mod.rs`), or any path named in `lib.rs`. `None` for another crate's path or a
    /// name in scope.
    fn rooted(&self, module: &[String], path: &[String]) -> Option<Vec<String>> {
        absolute(module, path).or_else(|| {
            let child = [module, &path[..1.min(path.len())]].concat();
            (module.is_empty() || self.modules.contains(&child)).then(|| [module, path].concat())
        })
    }

    /// The module whose item `path`, named in `module`, reaches: the longest module path it
    /// starts with, after following what modules bring in with `use`. `None` for a path that
    /// does not start at `crate`, `self` or `super` (another crate, or a name in scope).
    fn module_of(&self, module: &[String], path: &[String]) -> Option<Vec<String>> {
        let mut path = self.rooted(module, path)?;
        // A re-export can name another (`pub use a::Item` where `a` has `pub use b::Item`);
        // a bound, not a proof of termination, guards against a `use` naming itself.
        for _ in 0..16 {
            let within = (0..=path.len())
                .rev()
                .find(|end| self.modules.contains(&path[..*end]))?;
            let brought_in = path
                .get(within)
                .and_then(|name| self.uses.get(&path[..within])?.get(name));
            let brought_in = brought_in.and_then(|target| self.rooted(&path[..within], target));
            match brought_in {
                Some(target) if target.as_slice() != &path[..=within] => {
                    path = [target.as_slice(), &path[within + 1..]].concat();
                }
                _ => return Some(path[..within].to_vec()),
            }
        }
        None
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

/// Reads the items of `module` (at `place`) and of every module under it into `found`: the
/// module itself, what its `use` items bring in, and each path its code names.
fn read_module(items: &[syn::Item], place: &Place, module: &[String], found: &mut Modules) {
    found.modules.insert(module.to_vec());
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
                    read_module(items, &inner, &path, found);
                } else {
                    let (file, inner) = module_file(child, place);
                    read_module(&parse(&file).items, &inner, &path, found);
                }
            }
            syn::Item::Mod(_) => {}
            syn::Item::Use(used) if used.leading_colon.is_none() && !test_only(&used.attrs) => {
                let mut leaves = Vec::new();
                use_tree(&mut Vec::new(), &used.tree, &mut leaves);
                for (path, name) in leaves {
                    if let Some(name) = name {
                        found
                            .uses
                            .entry(module.to_vec())
                            .or_default()
                            .insert(name, path);
                    }
                }
                names.visit_item(item);
            }
            other => names.visit_item(other),
        }
    }
    found
        .named
        .extend(names.found.into_iter().map(|path| (module.to_vec(), path)));
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
