// The results of every accepted submission, in SQLite or PostgreSQL (the same schema, versioned:
// migrations are applied in order when the store opens), and the queries of GET /api/results and
// GET /api/summary.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "serve/database.h"

namespace wgfuse::serve {

enum class Flagged { any, yes, no };

// GET /api/results filters: column name (suite, name, vendor, ...) -> exact value; whether the
// result was flagged implausible.
struct ResultQuery {
  std::map<std::string, std::string> equals;
  Flagged flagged = Flagged::any;
  int64_t submission_id = 0;  // 0: any submission
  int64_t limit = 100, offset = 0;
};

class ResultsStore {
 public:
  static constexpr int64_t max_limit = 1000;
  // The columns GET /api/results may filter on, and GET /api/summary group by.
  static const std::vector<std::string>& filter_columns();
  static const std::vector<std::string>& summary_keys();

  // Opens the database and brings its schema up to the newest version.
  explicit ResultsStore(std::unique_ptr<Database> db);
  int schema_version();

  // Stores a validated submission (each result's "flags" as flag_implausible set them) in one
  // transaction; its id once the transaction is durable.
  int64_t insert(const nlohmann::json& submission, const std::string& received_at);

  // {"total": N, "rows": [...]} with the columns of docs/WEB_API.md.
  nlohmann::json query(const ResultQuery& q);
  std::string query_csv(const ResultQuery& q);
  // {"by": key, "groups": [{"key", "suite", "name", "unit", "sizes", "count", "median"}]} over the
  // results that match `filters` (its limit and offset aside) and are not flagged.
  nlohmann::json summary(const std::string& by, const ResultQuery& filters);

  std::string describe() const { return db_->describe(); }

 private:
  std::unique_ptr<Database> db_;
};

}  // namespace wgfuse::serve
