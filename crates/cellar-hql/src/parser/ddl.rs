//! CREATE TABLE, DROP TABLE, ALTER TABLE, SHOW, DESCRIBE: tables and their families.

use super::{error_at, Parser, Result};
use crate::ast::{
    AlterAction, AlterTable, Compression, CreateTable, DropTable, FamilySpec, Statement, TableRef,
};
use crate::lexer::TokenKind;

const OPTION_OR_END: &str = "a family option (MAX_VERSIONS, TTL, COMPRESSION, BLOCKSIZE, \
                             BLOOMFILTER), ',' or ')' after the family name";

impl Parser<'_> {
    /// After CREATE.
    pub(super) fn create_table(&mut self) -> Result<Statement> {
        self.expect_keyword("TABLE", "TABLE after CREATE")?;
        let if_not_exists = self.peek()?.is_keyword("IF") && self.peek_nth(1)?.is_keyword("NOT");
        if if_not_exists {
            self.next()?;
            self.next()?;
            self.expect_keyword("EXISTS", "EXISTS after IF NOT")?;
        }
        let name = self.name("a table name")?;
        self.expect(
            &TokenKind::LParen,
            "'(' and the families after the table name",
        )?;
        let families = self.family_specs()?;
        Ok(Statement::CreateTable(CreateTable {
            if_not_exists,
            name,
            families,
        }))
    }

    /// After DROP.
    pub(super) fn drop_table(&mut self) -> Result<Statement> {
        self.expect_keyword("TABLE", "TABLE after DROP")?;
        let if_exists = self.peek()?.is_keyword("IF") && self.peek_nth(1)?.is_keyword("EXISTS");
        if if_exists {
            self.next()?;
            self.next()?;
        }
        let name = self.name("a table name")?;
        Ok(Statement::DropTable(DropTable { if_exists, name }))
    }

    /// After SHOW: `TABLES` or `CREATE TABLE name`.
    pub(super) fn show(&mut self) -> Result<Statement> {
        if self.eat_keyword("TABLES")? {
            return Ok(Statement::ShowTables);
        }
        self.expect_keyword("CREATE", "TABLES or CREATE TABLE after SHOW")?;
        self.expect_keyword("TABLE", "TABLE after SHOW CREATE")?;
        let table = self.name("a table name")?;
        Ok(Statement::ShowCreateTable(TableRef { table }))
    }

    /// After DESCRIBE.
    pub(super) fn describe(&mut self) -> Result<Statement> {
        self.expect_keyword("TABLE", "TABLE after DESCRIBE")?;
        let table = self.name("a table name")?;
        Ok(Statement::DescribeTable(TableRef { table }))
    }

    /// After ALTER.
    pub(super) fn alter_table(&mut self) -> Result<Statement> {
        self.expect_keyword("TABLE", "TABLE after ALTER")?;
        let name = self.name("a table name")?;
        let action = if self.eat_keyword("ADD")? {
            self.expect(&TokenKind::LParen, "'(' and the families after ADD")?;
            AlterAction::Add(self.family_specs()?)
        } else if self.eat_keyword("DROP")? {
            self.expect(&TokenKind::LParen, "'(' and the family names after DROP")?;
            let mut names: Vec<String> = Vec::new();
            loop {
                let (name, tok) = self.family_name("a family name")?;
                if names.contains(&name) {
                    return Err(error_at(&tok, "a family not listed before"));
                }
                names.push(name);
                if !self.eat(&TokenKind::Comma)? {
                    self.expect(&TokenKind::RParen, "',' or ')' after the family name")?;
                    break;
                }
            }
            AlterAction::Drop(names)
        } else {
            let tok = self.next()?;
            return Err(error_at(&tok, "ADD or DROP after the table name"));
        };
        Ok(Statement::AlterTable(AlterTable { name, action }))
    }

    /// `family [options], ... )` after the '('.
    fn family_specs(&mut self) -> Result<Vec<FamilySpec>> {
        let mut families: Vec<FamilySpec> = Vec::new();
        loop {
            let (name, tok) = self.family_name("a family name")?;
            if families.iter().any(|f| f.name == name) {
                return Err(error_at(&tok, "a family not listed before"));
            }
            families.push(self.family_options(name)?);
            let tok = self.next()?;
            match tok.kind {
                TokenKind::Comma => {}
                TokenKind::RParen => return Ok(families),
                _ => return Err(error_at(&tok, OPTION_OR_END)),
            }
        }
    }

    fn family_options(&mut self, name: String) -> Result<FamilySpec> {
        let mut spec = FamilySpec::named(name);
        loop {
            let tok = self.peek()?;
            let TokenKind::Ident(word) = &tok.kind else {
                return Ok(spec);
            };
            let word = word.to_ascii_uppercase();
            let already_set = match word.as_str() {
                "MAX_VERSIONS" => spec.max_versions.is_some(),
                "TTL" => spec.ttl_seconds.is_some(),
                "COMPRESSION" => spec.compression.is_some(),
                "BLOCKSIZE" => spec.block_size_bytes.is_some(),
                "BLOOMFILTER" => spec.bloom.is_some(),
                _ => return Ok(spec),
            };
            if already_set {
                return Err(error_at(tok, "each family option at most once per family"));
            }
            self.next()?;
            self.eat(&TokenKind::Eq)?;
            match word.as_str() {
                "MAX_VERSIONS" => {
                    let n = self.number_in(
                        1,
                        u64::from(u32::MAX),
                        "a number from 1 to 4294967295 after MAX_VERSIONS",
                    )?;
                    spec.max_versions = u32::try_from(n).ok();
                }
                "TTL" => spec.ttl_seconds = Some(self.ttl_seconds()?),
                "COMPRESSION" => spec.compression = Some(self.compression()?),
                "BLOCKSIZE" => {
                    let n = self.number_in(1, u64::MAX, "a size in bytes of at least 1")?;
                    spec.block_size_bytes = Some(n);
                }
                _ => spec.bloom = Some(self.bloom()?),
            }
        }
    }

    /// `n [SECONDS|MINUTES|HOURS|DAYS]` (singular accepted), in seconds.
    fn ttl_seconds(&mut self) -> Result<u64> {
        let tok = self.next()?;
        let n = match tok.kind {
            TokenKind::Number(n) if n >= 1 => n,
            _ => return Err(error_at(&tok, "a number of at least 1 after TTL")),
        };
        let unit_seconds = match &self.peek()?.kind {
            TokenKind::Ident(w) => match w.to_ascii_uppercase().as_str() {
                "SECOND" | "SECONDS" => 1,
                "MINUTE" | "MINUTES" => 60,
                "HOUR" | "HOURS" => 3600,
                "DAY" | "DAYS" => 86_400,
                _ => return Ok(n),
            },
            _ => return Ok(n),
        };
        self.next()?;
        n.checked_mul(unit_seconds)
            .ok_or_else(|| error_at(&tok, "a TTL of at most 18446744073709551615 seconds"))
    }

    fn compression(&mut self) -> Result<Compression> {
        let tok = self.next()?;
        let TokenKind::Ident(word) = &tok.kind else {
            return Err(error_at(&tok, "none, lz4 or zstd after COMPRESSION"));
        };
        match word.to_ascii_lowercase().as_str() {
            "none" => Ok(Compression::None),
            "lz4" => Ok(Compression::Lz4),
            "zstd" => Ok(Compression::Zstd),
            _ => Err(error_at(&tok, "none, lz4 or zstd after COMPRESSION")),
        }
    }

    fn bloom(&mut self) -> Result<bool> {
        let tok = self.next()?;
        let TokenKind::Ident(word) = &tok.kind else {
            return Err(error_at(
                &tok,
                "true, false, none or rows after BLOOMFILTER",
            ));
        };
        match word.to_ascii_lowercase().as_str() {
            "true" | "rows" => Ok(true),
            "false" | "none" => Ok(false),
            _ => Err(error_at(
                &tok,
                "true, false, none or rows after BLOOMFILTER",
            )),
        }
    }
}
