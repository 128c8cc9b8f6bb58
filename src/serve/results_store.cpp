#include "serve/results_store.h"

#include <algorithm>
#include <cstdio>

#include "util/error.h"
#include "util/stats.h"

namespace wgfuse::serve {
namespace {

using nlohmann::json;

// Schema migrations, applied in order, each once (recorded in schema_migrations). "{id}" stands
// for the dialect's auto-increment key column. Never edit a released migration: add one.
const std::vector<std::vector<std::string>>& migrations() {
  static const std::vector<std::vector<std::string>> m = {
      // 1: submissions (who ran: adapter, browser, OS) and their results (one row per benchmark)
      {"CREATE TABLE submissions (id {id}, received_at TEXT NOT NULL, source TEXT NOT NULL,"
       " client_version TEXT NOT NULL, vendor TEXT NOT NULL, architecture TEXT NOT NULL, device TEXT NOT "
       "NULL,"
       " description TEXT NOT NULL, backend TEXT NOT NULL, features TEXT NOT NULL, limits TEXT NOT NULL,"
       " browser TEXT, browser_version TEXT, os TEXT NOT NULL)",
       "CREATE TABLE results (id {id}, submission_id BIGINT NOT NULL REFERENCES submissions (id),"
       " suite TEXT NOT NULL, name TEXT NOT NULL, kernel_version TEXT NOT NULL, sizes TEXT NOT NULL,"
       " unit TEXT NOT NULL, median DOUBLE PRECISION NOT NULL, min DOUBLE PRECISION NOT NULL,"
       " max DOUBLE PRECISION NOT NULL, std DOUBLE PRECISION NOT NULL, n_samples BIGINT NOT NULL,"
       " dispatches BIGINT NOT NULL, submits BIGINT NOT NULL, speedup DOUBLE PRECISION, baseline TEXT,"
       " bandwidth_gbs DOUBLE PRECISION, bound_gbs DOUBLE PRECISION, equivalence TEXT NOT NULL,"
       " samples TEXT NOT NULL)",
       "CREATE INDEX results_by_submission ON results (submission_id)",
       "CREATE INDEX results_by_suite_name ON results (suite, name)"},
      // 2: the reasons a result is implausible (a JSON array; empty when it is not)
      {"ALTER TABLE results ADD COLUMN flags TEXT NOT NULL DEFAULT '[]'"},
  };
  return m;
}

enum class Kind { integer, real, text, nullable_text, json_text };
struct Column {
  const char* name;  // in the API
  const char* expr;  // in SQL
  Kind kind;
};
// The flattened row of GET /api/results, in order.
const std::vector<Column>& row_columns() {
  static const std::vector<Column> c = {
      {"id", "r.id", Kind::integer},
      {"submission_id", "r.submission_id", Kind::integer},
      {"received_at", "s.received_at", Kind::text},
      {"source", "s.source", Kind::text},
      {"client_version", "s.client_version", Kind::text},
      {"vendor", "s.vendor", Kind::text},
      {"architecture", "s.architecture", Kind::text},
      {"device", "s.device", Kind::text},
      {"description", "s.description", Kind::text},
      {"backend", "s.backend", Kind::text},
      {"browser", "s.browser", Kind::nullable_text},
      {"browser_version", "s.browser_version", Kind::nullable_text},
      {"os", "s.os", Kind::text},
      {"suite", "r.suite", Kind::text},
      {"name", "r.name", Kind::text},
      {"kernel_version", "r.kernel_version", Kind::text},
      {"sizes", "r.sizes", Kind::json_text},
      {"unit", "r.unit", Kind::text},
      {"median", "r.median", Kind::real},
      {"min", "r.min", Kind::real},
      {"max", "r.max", Kind::real},
      {"std", "r.std", Kind::real},
      {"n_samples", "r.n_samples", Kind::integer},
      {"dispatches", "r.dispatches", Kind::integer},
      {"submits", "r.submits", Kind::integer},
      {"speedup", "r.speedup", Kind::real},
      {"baseline", "r.baseline", Kind::nullable_text},
      {"bandwidth_gbs", "r.bandwidth_gbs", Kind::real},
      {"bound_gbs", "r.bound_gbs", Kind::real},
      {"equivalence", "r.equivalence", Kind::json_text},
      {"samples", "r.samples", Kind::json_text},
      {"flags", "r.flags", Kind::json_text},
  };
  return c;
}

const Column& column_named(const std::string& name) {
  for (auto& c : row_columns())
    if (name == c.name) return c;
  throw Error("unknown result column '" + name + "'");
}

const std::string from_clause = " FROM results r JOIN submissions s ON s.id = r.submission_id";

// " WHERE a = ? AND b = ?" for the filters, their values appended to `params`.
std::string where_clause(const ResultQuery& q, std::vector<Value>& params) {
  std::string sql;
  for (auto& [name, value] : q.equals) {
    sql += sql.empty() ? " WHERE " : " AND ";
    sql += column_named(name).expr;
    sql += " = ?";
    params.push_back(value);
  }
  if (q.submission_id) {
    sql += sql.empty() ? " WHERE " : " AND ";
    sql += "r.submission_id = ?";
    params.push_back(q.submission_id);
  }
  if (q.flagged != Flagged::any)
    sql += std::string(sql.empty() ? " WHERE " : " AND ") +
           (q.flagged == Flagged::no ? "r.flags = '[]'" : "r.flags <> '[]'");
  return sql;
}

// JSON as stored: text that is always valid UTF-8 (the parser checked it; this is the second line).
std::string stored_json(const json& v) {
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

json to_json(const Value& v, Kind kind) {
  if (std::holds_alternative<std::nullptr_t>(v)) return nullptr;
  if (auto* i = std::get_if<int64_t>(&v)) return kind == Kind::real ? json(double(*i)) : json(*i);
  if (auto* d = std::get_if<double>(&v)) return *d;
  const auto& s = std::get<std::string>(v);
  return kind == Kind::json_text ? json::parse(s) : json(s);
}

std::string csv_field(const Value& v) {
  if (std::holds_alternative<std::nullptr_t>(v)) return "";
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) return json(*d).dump();  // shortest round-trip form
  std::string s = std::get<std::string>(v);
  // A cell a spreadsheet would run as a formula gets a leading apostrophe (OWASP CSV injection).
  if (!s.empty() && std::string_view("=+-@\t\r").find(s[0]) != std::string_view::npos) s.insert(0, 1, '\'');
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

Value text_or_null(const json& v) {
  return v.is_null() ? Value(nullptr) : Value(v.get<std::string>());
}
Value real_or_null(const json& v) {
  return v.is_null() ? Value(nullptr) : Value(v.get<double>());
}

std::string replace_id(std::string sql, const std::string& id_column) {
  for (size_t at; (at = sql.find("{id}")) != std::string::npos;) sql.replace(at, 4, id_column);
  return sql;
}

// Appends `item` to the `separator`-separated list `out`.
void append_listed(std::string& out, std::string_view separator, std::string_view item) {
  if (!out.empty()) out += separator;
  out += item;
}

}  // namespace

const std::vector<std::string>& ResultsStore::filter_columns() {
  static const std::vector<std::string> c = {"suite",   "name",    "vendor", "architecture", "device",
                                             "backend", "browser", "os",     "source"};
  return c;
}

const std::vector<std::string>& ResultsStore::summary_keys() {
  static const std::vector<std::string> k = {"vendor", "device", "backend", "browser", "source"};
  return k;
}

ResultsStore::ResultsStore(std::unique_ptr<Database> db) : db_(std::move(db)) {
  db_->transaction([&](Connection& c) {
    c.run(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, applied_at TEXT NOT "
        "NULL)");
  });
  const auto& all = migrations();
  for (int version = schema_version() + 1; version <= int(all.size()); ++version) {
    db_->transaction([&](Connection& c) {
      for (auto& statement : all[version - 1]) c.run(replace_id(statement, db_->id_column()));
      c.run("INSERT INTO schema_migrations (version, applied_at) VALUES (?, CURRENT_TIMESTAMP)",
            {int64_t(version)});
    });
  }
  if (int found = schema_version(); found > int(all.size()))
    throw Error(describe() + ": the database has schema version " + std::to_string(found) +
                ", newer than this wgfuse knows (" + std::to_string(all.size()) + "); use a newer wgfuse");
}

int ResultsStore::schema_version() {
  int64_t version = 0;
  db_->transaction([&](Connection& c) {
    auto rows = c.run("SELECT MAX(version) FROM schema_migrations");
    if (auto* v = std::get_if<int64_t>(&rows.at(0).at(0))) version = *v;
  });
  return int(version);
}

int64_t ResultsStore::insert(const json& s, const std::string& received_at) {
  const json& a = s.at("adapter");
  const json& browser = s.at("browser");
  int64_t id = 0;
  db_->transaction([&](Connection& c) {
    id = std::get<int64_t>(
        c.run("INSERT INTO submissions (received_at, source, client_version, vendor, architecture, device,"
              " description, backend, features, limits, browser, browser_version, os)"
              " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
              {received_at, s.at("source").get<std::string>(), s.at("client_version").get<std::string>(),
               a.at("vendor").get<std::string>(), a.at("architecture").get<std::string>(),
               a.at("device").get<std::string>(), a.at("description").get<std::string>(),
               a.at("backend").get<std::string>(), stored_json(a.value("features", json::array())),
               stored_json(a.value("limits", json::object())),
               browser.is_null() ? Value(nullptr) : Value(browser.at("name").get<std::string>()),
               browser.is_null() ? Value(nullptr) : Value(browser.at("version").get<std::string>()),
               s.at("os").get<std::string>()})
            .at(0)
            .at(0));
    for (const json& r : s.at("results")) {
      c.run(
          "INSERT INTO results (submission_id, suite, name, kernel_version, sizes, unit, median, min, max, "
          "std,"
          " n_samples, dispatches, submits, speedup, baseline, bandwidth_gbs, bound_gbs, equivalence, "
          "samples, flags)"
          " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
          {id,
           r.at("suite").get<std::string>(),
           r.at("name").get<std::string>(),
           r.at("kernel_version").get<std::string>(),
           stored_json(r.at("sizes")),
           r.at("unit").get<std::string>(),
           r.at("median").get<double>(),
           r.at("min").get<double>(),
           r.at("max").get<double>(),
           r.at("std").get<double>(),
           int64_t(r.at("samples").size()),
           r.at("dispatches").get<int64_t>(),
           r.at("submits").get<int64_t>(),
           real_or_null(r.at("speedup")),
           text_or_null(r.at("baseline")),
           real_or_null(r.at("bandwidth_gbs")),
           real_or_null(r.at("bound_gbs")),
           stored_json(r.at("equivalence")),
           stored_json(r.at("samples")),
           stored_json(r.value("flags", json::array()))});
    }
  });
  return id;
}

namespace {
// The rows of one page, and the total matching count, in one transaction (a consistent snapshot).
std::pair<int64_t, std::vector<Row>> page(Database& db, const ResultQuery& q) {
  std::string columns;
  for (auto& c : row_columns()) append_listed(columns, ", ", c.expr);
  std::vector<Value> params;
  const std::string where = where_clause(q, params);
  std::pair<int64_t, std::vector<Row>> out;
  db.transaction([&](Connection& c) {
    out.first = std::get<int64_t>(c.run("SELECT COUNT(*)" + from_clause + where, params).at(0).at(0));
    auto paged = params;
    paged.push_back(q.limit);
    paged.push_back(q.offset);
    out.second = c.run("SELECT " + columns + from_clause + where + " ORDER BY r.id LIMIT ? OFFSET ?", paged);
  });
  return out;
}
}  // namespace

json ResultsStore::query(const ResultQuery& q) {
  auto [total, rows] = page(*db_, q);
  json out_rows = json::array();
  const auto& columns = row_columns();
  for (auto& row : rows) {
    json r = json::object();
    for (size_t k = 0; k < columns.size(); ++k) r[columns[k].name] = to_json(row[k], columns[k].kind);
    out_rows.push_back(std::move(r));
  }
  return {{"total", total}, {"rows", out_rows}};
}

std::string ResultsStore::query_csv(const ResultQuery& q) {
  auto rows = page(*db_, q).second;
  std::string out;
  std::string header;
  for (auto& c : row_columns()) append_listed(header, ",", c.name);
  out += header + "\r\n";
  for (auto& row : rows) {
    for (size_t k = 0; k < row.size(); ++k) {
      if (k) out += ',';
      out += csv_field(row[k]);
    }
    out += "\r\n";
  }
  return out;
}

json ResultsStore::summary(const std::string& by, const ResultQuery& filters) {
  if (std::find(summary_keys().begin(), summary_keys().end(), by) == summary_keys().end())
    throw Error("unknown summary key '" + by + "'");
  std::vector<Value> params;
  ResultQuery q = filters;
  q.flagged = Flagged::no;  // an implausible result is in no median
  const std::string where = where_clause(q, params);
  std::vector<Row> rows;
  db_->transaction([&](Connection& c) {
    rows = c.run("SELECT COALESCE(" + std::string(column_named(by).expr) +
                     ", ''), r.suite, r.name, r.unit, r.sizes, r.median" + from_clause + where,
                 params);
  });
  // Medians of the rows' medians per (key, suite, name, unit, sizes), computed here so both databases
  // agree; a problem size is a group of its own (sizes as stored: the same submitter's key order).
  using Key = std::tuple<std::string, std::string, std::string, std::string, std::string>;
  std::map<Key, std::vector<double>> groups;
  for (auto& row : rows) {
    double median = std::holds_alternative<int64_t>(row[5]) ? double(std::get<int64_t>(row[5]))
                                                            : std::get<double>(row[5]);
    const std::string sizes = json::parse(std::get<std::string>(row[4])).dump();  // canonical key order
    groups[{std::get<std::string>(row[0]), std::get<std::string>(row[1]), std::get<std::string>(row[2]),
            std::get<std::string>(row[3]), sizes}]
        .push_back(median);
  }
  json out = json::array();
  for (auto& [key, medians] : groups) {
    auto& [k, s, name, unit, sizes] = key;
    const auto ci = median_interval(medians);
    out.push_back(
        {{"key", k},
         {"suite", s},
         {"name", name},
         {"unit", unit},
         {"sizes", json::parse(sizes)},
         {"count", medians.size()},
         {"median", summarize(medians).median},
         {"ci", ci.level > 0 ? json{{"low", ci.low}, {"high", ci.high}, {"level", ci.level}} : json()}});
  }
  return {{"by", by}, {"groups", out}};
}

}  // namespace wgfuse::serve
