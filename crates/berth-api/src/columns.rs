//! The shape of a Table column, which the registry (a custom kind's columns) and the printers
//! both name: a leaf module, so that neither depends on the other for it.

/// One Table column definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Column {
    /// Header as upstream names it (`Nominated Node`); kubectl upper-cases it.
    pub name: &'static str,
    /// OpenAPI type of the cells: `string`, `integer`, `boolean`.
    pub ty: &'static str,
    /// `name` for the column holding the object name, else empty.
    pub format: &'static str,
    /// Human description.
    pub description: &'static str,
    /// 0 = always shown, 1 = shown by `-o wide`.
    pub priority: u8,
}

/// The columns of a custom resource's Table: `columns[0]` is `Name`, and each later column
/// `i` reads `json_paths[i - 1]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CustomColumns {
    /// `Name`, then one column per printer column.
    pub columns: &'static [Column],
    /// The JSONPath of each printer column (`.spec.replicas`), in the order of `columns[1..]`.
    pub json_paths: &'static [&'static str],
}
