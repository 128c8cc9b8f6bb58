// The SQL databases behind the results store: SQLite (one file, WAL) and PostgreSQL (libpq), seen
// through one small interface, so that the schema, its migrations and every query are written
// once. Statements use `?` placeholders and always bind their parameters.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace wgfuse::serve {

using Value = std::variant<std::nullptr_t, int64_t, double, std::string>;
using Row = std::vector<Value>;

class Connection {
 public:
  virtual ~Connection() = default;
  // Runs one statement with `params` bound to its `?` placeholders; the rows it returns.
  virtual std::vector<Row> run(const std::string& sql, const std::vector<Value>& params = {}) = 0;
};

class Database {
 public:
  virtual ~Database() = default;
  // Runs `work` in one transaction, committed (durably) before this returns; rolled back if it throws.
  virtual void transaction(const std::function<void(Connection&)>& work) = 0;
  // The column type of an auto-incremented primary key, the one DDL difference between the two.
  virtual std::string id_column() const = 0;
  virtual std::string describe() const = 0;  // for the log: "SQLite results.sqlite"
};

// `target`: "postgresql://..." or "postgres://..." (a libpq connection URI), else a SQLite file.
std::unique_ptr<Database> open_database(const std::string& target);
std::unique_ptr<Database> open_sqlite(const std::string& path);
std::unique_ptr<Database> open_postgres(const std::string& uri);

}  // namespace wgfuse::serve
