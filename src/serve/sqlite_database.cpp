// SQLite: one connection guarded by a mutex (writes serialise in SQLite anyway), WAL journal with
// synchronous=FULL so that a committed transaction survives a crash or power loss.
#include <sqlite3.h>

#include <map>
#include <mutex>

#include "serve/database.h"
#include "util/error.h"

namespace wgfuse::serve {
namespace {

class SqliteConnection final : public Connection {
 public:
  SqliteConnection(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  ~SqliteConnection() override {
    for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  }

  std::vector<Row> run(const std::string& sql, const std::vector<Value>& params) override {
    sqlite3_stmt* stmt = prepare(sql);
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    for (size_t k = 0; k < params.size(); ++k) bind(stmt, int(k + 1), params[k]);
    std::vector<Row> rows;
    for (;;) {
      int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) fail("running '" + sql + "'");
      Row row;
      for (int c = 0, n = sqlite3_column_count(stmt); c < n; ++c) row.push_back(column(stmt, c));
      rows.push_back(std::move(row));
    }
    sqlite3_reset(stmt);
    return rows;
  }

  void exec(const char* sql) {
    if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK)
      fail(std::string("running '") + sql + "'");
  }

  [[noreturn]] void fail(const std::string& what) {
    throw Error("SQLite " + path_ + ": " + what + ": " + sqlite3_errmsg(db_));
  }

 private:
  // Statements are prepared once and kept: the same few run for every request.
  sqlite3_stmt* prepare(const std::string& sql) {
    if (auto it = statements_.find(sql); it != statements_.end()) return it->second;
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), int(sql.size()), &stmt, nullptr) != SQLITE_OK)
      fail("preparing '" + sql + "'");
    statements_.emplace(sql, stmt);
    return stmt;
  }

  void bind(sqlite3_stmt* stmt, int at, const Value& v) {
    int rc = std::visit(
        [&](auto&& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::nullptr_t>)
            return sqlite3_bind_null(stmt, at);
          else if constexpr (std::is_same_v<T, int64_t>)
            return sqlite3_bind_int64(stmt, at, x);
          else if constexpr (std::is_same_v<T, double>)
            return sqlite3_bind_double(stmt, at, x);
          else
            return sqlite3_bind_text(stmt, at, x.data(), int(x.size()), SQLITE_TRANSIENT);
        },
        v);
    if (rc != SQLITE_OK) fail("binding parameter " + std::to_string(at));
  }

  static Value column(sqlite3_stmt* stmt, int c) {
    switch (sqlite3_column_type(stmt, c)) {
      case SQLITE_NULL:
        return nullptr;
      case SQLITE_INTEGER:
        return int64_t(sqlite3_column_int64(stmt, c));
      case SQLITE_FLOAT:
        return sqlite3_column_double(stmt, c);
      default: {
        auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, c));
        return std::string(text, size_t(sqlite3_column_bytes(stmt, c)));
      }
    }
  }

  sqlite3* db_;
  std::string path_;
  std::map<std::string, sqlite3_stmt*> statements_;
};

class SqliteDatabase final : public Database {
 public:
  explicit SqliteDatabase(const std::string& path) : path_(path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK) {
      std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw Error("SQLite: cannot open database file '" + path + "': " + why);
    }
    connection_ = std::make_unique<SqliteConnection>(db_, path);
    sqlite3_busy_timeout(db_, 5000);  // another process (a backup, the sqlite3 shell) may hold a lock
    connection_->exec("PRAGMA journal_mode=WAL");
    connection_->exec("PRAGMA synchronous=FULL");
    connection_->exec("PRAGMA foreign_keys=ON");
  }
  ~SqliteDatabase() override {
    connection_.reset();
    sqlite3_close(db_);
  }

  void transaction(const std::function<void(Connection&)>& work) override {
    std::lock_guard lock(mutex_);
    connection_->exec("BEGIN IMMEDIATE");
    try {
      work(*connection_);
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
    connection_->exec("COMMIT");
  }

  std::string id_column() const override { return "INTEGER PRIMARY KEY AUTOINCREMENT"; }
  std::string describe() const override { return "SQLite " + path_; }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
  std::unique_ptr<SqliteConnection> connection_;
  std::mutex mutex_;
};

}  // namespace

std::unique_ptr<Database> open_sqlite(const std::string& path) {
  return std::make_unique<SqliteDatabase>(path);
}

std::unique_ptr<Database> open_database(const std::string& target) {
  if (target.starts_with("postgresql://") || target.starts_with("postgres://")) return open_postgres(target);
  return open_sqlite(target);
}

}  // namespace wgfuse::serve
