// Driver for the authors' own experiment code (github.com/wojciechmacyna/BloomHierarchy),
// used by scripts/authors-baseline.sh in place of their main.cpp. It is bfh's code: it holds
// none of theirs, it calls their DBOperation phases in the order their MainFlow does, with
// N, the domain and the query passed on the command line instead of edited into main.cpp,
// and it writes CSV rows with the column names of bfh's own experiments.
//
//   authors_driver --exp two|ten --n N [--domain PCT] [--value V] [--key K] [--ratio D]
//                  [--key-repeats R] [--commit C] [--their-commit C] --build NAME --run I
//                  --work DIR --out DIR
//
// --exp two   their ExpTwo (MainFlow at percentage 0, "Value187719", ratio 5: Table I's
//             insert, Fig. 8/9), then ExpSeven (RetrieveData "Key187719": Table I's key
//             lookup, repeated --key-repeats times) and ExpEight (ScanningWithoutBloom with
//             "Key187719" as the value: Table I's scan), in their main()'s order.
// --exp ten   one domain of their ExpTen (MainFlow at percentage PCT, "Value1879": Table III,
//             Fig. 13).
//
// Their code finds its files through relative paths (DBOperation::dbDir "./db/",
// DBOperation::outDir "../out/"): the driver makes DIR/out/db and runs in DIR/out, where both
// name DIR/out/db. Every phase is timed twice: by their own code (whole milliseconds, or
// microseconds for the key lookup, read back from the log stream or stdout they write) and
// by this driver around the call (steady_clock). time_s is their figure; time_wrap_s ours.
// After the timed search, the tree is walked once more, untimed, to count the internal
// filters tested (their code counts only those that said maybe).
//
// Every row ends with authors_commit (their checkout, --their-commit) and commit (bfh's, of
// this driver and the script that ran it, --commit): "unknown" when not given.
//
// Compiled and linked exactly as their Makefile compiles their main.cpp (flags read from
// their Makefile by the script), with or without -O2.

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bitset>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <dirent.h>

#include "leveldb/env.h"
#include "leveldb/options.h"
#include "leveldb/table.h"

// Their bloomTree keeps its root private; the untimed walk below needs it. Every standard
// header their headers use is included above, so only their own classes are affected.
#define private public
#include "bloom_hierarchy/bloomTree.hpp"
#undef private
#include "bloom_hierarchy/dbOperation.hpp"
#include "bloom_hierarchy/dbThreadPool.hpp"

namespace {

struct args_t {
  std::string exp, build = "shipped", work, out, value, key = "Key187719";
  std::string commit = "unknown", their_commit = "unknown";
  long long n = 0;
  int domain = 0, ratio = 5, run = 1, key_repeats = 5;
};

[[noreturn]] void die(const std::string &msg) {
  std::cerr << "authors_driver: " << msg << std::endl;
  std::exit(2);
}

args_t parse_args(int argc, char **argv) {
  args_t a;
  for (int i = 1; i < argc; i++) {
    std::string o = argv[i];
    if (i + 1 >= argc) die("option " + o + " needs a value");
    std::string v = argv[++i];
    if (o == "--exp") a.exp = v;
    else if (o == "--n") a.n = std::stoll(v);
    else if (o == "--domain") a.domain = std::stoi(v);
    else if (o == "--value") a.value = v;
    else if (o == "--key") a.key = v;
    else if (o == "--ratio") a.ratio = std::stoi(v);
    else if (o == "--key-repeats") a.key_repeats = std::stoi(v);
    else if (o == "--build") a.build = v;
    else if (o == "--run") a.run = std::stoi(v);
    else if (o == "--work") a.work = v;
    else if (o == "--out") a.out = v;
    else if (o == "--commit") a.commit = v;
    else if (o == "--their-commit") a.their_commit = v;
    else die("unknown option " + o);
  }
  if (a.exp != "two" && a.exp != "ten") die("--exp must be two or ten");
  if (a.n < 2 || a.n > 2147483647LL) die("--n must be in 2..2^31-1 (their itemNumber is an int)");
  if (a.work.empty() || a.out.empty()) die("--work and --out are required");
  if (a.value.empty()) a.value = a.exp == "two" ? "Value187719" : "Value1879";
  return a;
}

// A log stream for one phase: their phase writes its tab-separated figures into it.
struct phase_log_t {
  std::string path;
  std::ofstream f;
  explicit phase_log_t(const std::string &p) : path(p) { f.open(p, std::ios::trunc); }
  std::vector<std::string> fields() {
    f.close();
    std::ifstream in(path);
    std::vector<std::string> v;
    std::string t;
    while (in >> t) v.push_back(t);
    std::remove(path.c_str());
    return v;
  }
};

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string db_dir(const std::string &name) { return "db/" + name; }

struct files_t {
  long ldb = 0, unreadable = 0, bloom = 0;
  unsigned long long ldb_bytes = 0;
};

// Counts the .ldb files in the directory (all of them, as their phases list them) and how
// many of them LevelDB's Table::Open refuses (a compaction output abandoned at close has no
// footer; their DumpFile then prints "Cannot dump ssTable" and reads nothing from it).
files_t count_files(const std::string &dir) {
  files_t r;
  DIR *d = opendir(dir.c_str());
  if (!d) return r;
  while (struct dirent *e = readdir(d)) {
    std::string n = e->d_name;
    auto ends = [&](const std::string &x) {
      return n.size() >= x.size() && n.compare(n.size() - x.size(), x.size(), x) == 0;
    };
    if (ends(".bloom")) r.bloom++;
    if (!ends(".ldb")) continue;
    r.ldb++;
    std::string p = dir + "/" + n;
    uint64_t size = 0;
    leveldb::Env *env = leveldb::Env::Default();
    leveldb::RandomAccessFile *file = nullptr;
    leveldb::Table *table = nullptr;
    leveldb::Status s = env->GetFileSize(p, &size);
    r.ldb_bytes += size;
    if (s.ok()) s = env->NewRandomAccessFile(p, &file);
    if (s.ok()) s = leveldb::Table::Open(leveldb::Options(), file, size, &table);
    if (!s.ok()) r.unreadable++;
    delete table;
    delete file;
  }
  closedir(d);
  return r;
}

// The tree as their createLevel built it, walked for the query as their checkExistance does.
struct tree_walk_t {
  long internal = 0, empty_internal = 0, leaves = 0, height = 0;
  long tested = 0, maybe = 0, reached = 0;
};

void shape(node *n, int depth, tree_walk_t &w) {
  if (n->filename != "Memory") {
    w.leaves++;
    w.height = std::max<long>(w.height, depth);
    return;
  }
  w.internal++;
  if (n->children.empty()) w.empty_internal++;
  for (node *c : n->children) shape(c, depth + 1, w);
}

void walk(node *n, const std::string &v, tree_walk_t &w) {
  if (n->filename != "Memory") {
    w.reached++;
    return;
  }
  w.tested++;
  if (!n->blValue.exists(v)) return;
  w.maybe++;
  for (node *c : n->children) walk(c, v, w);
}

// Their checkout's commit and bfh's (args_t), set once in main: the last cells of every row.
std::pair<std::string, std::string> commits{"unknown", "unknown"};

// Appends one CSV row to <out>/<name>.csv, writing the header first if the file is new.
struct csv_t {
  std::vector<std::pair<std::string, std::string>> cells;
  template <typename T> void put(const std::string &c, const T &v) {
    std::ostringstream s;
    s.precision(9);
    s << v;
    cells.emplace_back(c, s.str());
  }
  void write(const std::string &out, const std::string &name) {
    put("authors_commit", commits.first);
    put("commit", commits.second);
    std::string p = out + "/" + name + ".csv";
    struct stat st;
    bool fresh = stat(p.c_str(), &st) != 0 || st.st_size == 0;
    std::ofstream f(p, std::ios::app);
    if (!f) die("cannot write " + p);
    if (fresh) {
      for (size_t i = 0; i < cells.size(); i++) f << (i ? "," : "") << cells[i].first;
      f << "\n";
    }
    for (size_t i = 0; i < cells.size(); i++) f << (i ? "," : "") << cells[i].second;
    f << "\n";
  }
};

struct phase_t {
  std::string name;
  double wrap_s = 0;
  long their_ms = -1;  // their own figure
  std::vector<std::string> fields;
};

DBOperation oper;

template <typename F> phase_t run_phase(const std::string &name, F body) {
  phase_t p;
  p.name = name;
  phase_log_t log("phase_" + name + ".log");
  double t0 = now_s();
  body(log.f);
  p.wrap_s = now_s() - t0;
  p.fields = log.fields();
  return p;
}

long field(const phase_t &p, size_t i) {
  if (i >= p.fields.size()) return -1;
  return std::stol(p.fields[i]);
}

void common_cells(csv_t &c, const args_t &a, const std::string &experiment) {
  c.put("source", "authors");
  c.put("build", a.build);
  c.put("run", a.run);
  c.put("experiment", experiment);
  c.put("engine", "leveldb");
  c.put("scale", "authors");
  c.put("n", a.n);
  c.put("entries", a.n - 1);  // their loops put keys 1 .. N-1
}

void db_cells(csv_t &c, const args_t &a) {
  c.put("domain_pct", a.domain == 0 ? 100 : a.domain);
  c.put("domain_mode", a.domain == 0 ? "bijection" : "random_with_replacement");
  c.put("insert_order", "sequential");
  c.put("m", 2000000);
  c.put("k", 3);
  c.put("d", a.ratio);
  c.put("table_bytes", 2097152);
  c.put("leaves_on_disk", 1);
  c.put("placement", "paper");
}

void phase_row(const args_t &a, const std::string &experiment, const phase_t &p,
               const files_t &f) {
  csv_t c;
  common_cells(c, a, experiment);
  c.put("domain_pct", a.domain == 0 ? 100 : a.domain);
  c.put("phase", p.name);
  c.put("time_s", p.their_ms >= 0 ? p.their_ms / 1000.0 : p.wrap_s);
  c.put("time_wrap_s", p.wrap_s);
  c.put("their_ms", p.their_ms);
  std::string raw;
  for (const auto &s : p.fields) raw += (raw.empty() ? "" : " ") + s;
  c.put("their_log", raw);
  c.put("tables", f.ldb);
  c.put("tables_unreadable", f.unreadable);
  c.put("bloom_files", f.bloom);
  c.put("ldb_bytes", f.ldb_bytes);
  c.write(a.out, "phases");
}

struct flow_t {
  phase_t insert, bloom, leaves, scan, leaf_level, tree, search;
  files_t files_after_insert, files_after_bloom;
  tree_walk_t walk;
  long leaves_found = -1, entries_found_leaves = -1, hier_found = -1, hier_entries = -1,
       hier_maybe = -1, hier_reached = -1;
};

// Their MainFlow (main.cpp), phase by phase, each with its own log stream.
flow_t main_flow(const args_t &a, const std::string &dbname, const std::string &experiment) {
  flow_t r;
  bloomTree *tree = new bloomTree(a.ratio);
  r.insert = run_phase("insert", [&](std::ofstream &log) {
    oper.DbCreation(log, dbname, (int)a.n, a.domain);
  });
  r.insert.their_ms = field(r.insert, 0);
  r.files_after_insert = count_files(db_dir(dbname));
  phase_row(a, experiment, r.insert, r.files_after_insert);

  r.bloom = run_phase("bloom_create", [&](std::ofstream &log) {
    oper.CreateBloomValue(log, dbname);
  });
  r.bloom.their_ms = field(r.bloom, 0);
  r.files_after_bloom = count_files(db_dir(dbname));
  phase_row(a, experiment, r.bloom, r.files_after_bloom);

  // ScanningWithBloom logs: leaf filters that said maybe, entries found, ms.
  r.leaves = run_phase("leaves_scan", [&](std::ofstream &log) {
    oper.ScanningWithBloom(log, dbname, a.value);
  });
  r.leaves_found = field(r.leaves, 0);
  r.entries_found_leaves = field(r.leaves, 1);
  r.leaves.their_ms = field(r.leaves, 2);
  phase_row(a, experiment, r.leaves, r.files_after_bloom);

  r.scan = run_phase("scan", [&](std::ofstream &log) {
    oper.ScanningWithoutBloom(log, dbname, a.value);
  });
  r.scan.their_ms = field(r.scan, 0);
  phase_row(a, experiment, r.scan, r.files_after_bloom);

  r.leaf_level = run_phase("leaf_level_create", [&](std::ofstream &log) {
    oper.CreateLeafHierarchyLevel(log, dbname, tree);
  });
  r.leaf_level.their_ms = field(r.leaf_level, 0);
  phase_row(a, experiment, r.leaf_level, r.files_after_bloom);

  r.tree = run_phase("hierarchy_create", [&](std::ofstream &log) {
    oper.CreateHierarchy(log, dbname, tree);
  });
  r.tree.their_ms = field(r.tree, 0);
  phase_row(a, experiment, r.tree, r.files_after_bloom);

  // CheckInHierarchy logs [leaf filters maybe, entries found,] internal maybe, ms, leaves
  // reached; the bracketed pair only when some leaf was reached.
  r.search = run_phase("hierarchy_search", [&](std::ofstream &log) {
    oper.CheckInHierarchy(log, tree, a.value);
  });
  size_t o = r.search.fields.size() == 5 ? 2 : 0;
  if (o) {
    r.hier_found = field(r.search, 0);
    r.hier_entries = field(r.search, 1);
  } else {
    r.hier_found = 0;
    r.hier_entries = 0;
  }
  r.hier_maybe = field(r.search, o);
  r.search.their_ms = field(r.search, o + 1);
  r.hier_reached = field(r.search, o + 2);
  phase_row(a, experiment, r.search, r.files_after_bloom);

  shape(tree->root, 0, r.walk);
  walk(tree->root, a.value, r.walk);
  delete tree;  // as MainFlow does (their nodes are not freed)
  return r;
}

void method_row(const args_t &a, const std::string &name, const flow_t &r, const phase_t &p,
                const std::string &method) {
  csv_t c;
  common_cells(c, a, a.exp == "two" ? "fig8" : "fig13");
  db_cells(c, a);
  c.put("method", method);
  c.put("series", method == "hierarchy" ? "hierarchy-paper" : method);
  c.put("query", a.value);
  c.put("cache", "warm");
  c.put("queries", 1);
  c.put("time_s", p.their_ms / 1000.0);
  c.put("time_wrap_s", p.wrap_s);
  long live = r.files_after_bloom.ldb;
  bool h = method == "hierarchy", l = method == "leaves";
  c.put("internal_probes", h ? r.walk.tested : 0);
  c.put("internal_maybe", h ? r.hier_maybe : 0);
  c.put("leaf_probes", h ? r.hier_reached : l ? r.files_after_bloom.bloom : 0);
  c.put("leaf_positives", h ? r.hier_found : l ? r.leaves_found : 0);
  c.put("tables_scanned", h ? r.hier_found : l ? r.leaves_found : live);
  c.put("tables_live", live);
  c.put("tables_unreadable", r.files_after_bloom.unreadable);
  if (h) c.put("entries_found", r.hier_entries);
  else if (l) c.put("entries_found", r.entries_found_leaves);
  else c.put("entries_found", "");  // their scan does not log what it found
  c.put("internal_nodes", r.walk.internal);
  c.put("empty_internal_nodes", r.walk.empty_internal);
  c.put("tree_height", r.walk.height);
  c.write(a.out, name);
}

std::vector<double> key_lookups(const args_t &a, const std::string &dbname) {
  std::vector<double> us;
  for (int i = 0; i < a.key_repeats; i++) {
    std::ostringstream cap;
    std::streambuf *old = std::cout.rdbuf(cap.rdbuf());
    double t0 = now_s();
    oper.RetrieveData(dbname, a.key);
    double wrap = now_s() - t0;
    std::cout.rdbuf(old);
    std::string s = cap.str();
    std::cout << s;
    size_t p = s.find("(micro seconds)");
    if (p == std::string::npos) die("RetrieveData printed no time: " + s);
    double t = std::stod(s.substr(p + std::strlen("(micro seconds)")));
    us.push_back(t);
    csv_t c;
    common_cells(c, a, "table1");
    c.put("domain_pct", 100);
    c.put("phase", "key_lookup");
    c.put("time_s", t / 1e6);
    c.put("time_wrap_s", wrap);
    c.put("their_ms", t / 1000.0);
    std::string got = s.substr(0, p);
    size_t td = got.rfind("Time duration");
    if (td != std::string::npos) got.erase(td);
    c.put("their_log", "value=" + got);
    files_t f = count_files(db_dir(dbname));
    c.put("tables", f.ldb);
    c.put("tables_unreadable", f.unreadable);
    c.put("bloom_files", f.bloom);
    c.put("ldb_bytes", f.ldb_bytes);
    c.write(a.out, "phases");
  }
  return us;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? NAN : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char **argv) {
  args_t a = parse_args(argc, argv);
  commits = {a.their_commit, a.commit};
  std::string outdir = a.work + "/out";
  mkdir(a.work.c_str(), 0755);
  mkdir(outdir.c_str(), 0755);
  mkdir((outdir + "/db").c_str(), 0755);
  if (chdir(outdir.c_str()) != 0) die("cannot enter " + outdir);

  if (a.exp == "two") {
    std::string dbname = "ExTwo" + std::to_string(a.n);
    flow_t r = main_flow(a, dbname, "fig8");
    method_row(a, "fig8", r, r.scan, "scan");
    method_row(a, "fig8", r, r.leaves, "leaves");
    method_row(a, "fig8", r, r.search, "hierarchy");

    // ExpSeven, then ExpEight, as their main() orders them.
    std::vector<double> us = key_lookups(a, dbname);
    phase_t scan_key = run_phase("scan_key", [&](std::ofstream &log) {
      oper.ScanningWithoutBloom(log, dbname, a.key);
    });
    scan_key.their_ms = field(scan_key, 0);
    files_t f = count_files(db_dir(dbname));
    phase_row(a, "table1", scan_key, f);

    csv_t c;
    common_cells(c, a, "table1");
    db_cells(c, a);
    c.put("tables", r.files_after_insert.ldb);
    c.put("tables_unreadable", r.files_after_insert.unreadable);
    c.put("insert_s", r.insert.their_ms / 1000.0);
    c.put("queries", 1);
    c.put("scan_lookup_s", scan_key.their_ms / 1000.0);
    c.put("scan_query", a.key);
    c.put("scan_tables", f.ldb);
    c.put("scan_mainflow_s", r.scan.their_ms / 1000.0);
    c.put("key_lookup_s", median(us) / 1e6);
    c.put("key_lookup_min_s", *std::min_element(us.begin(), us.end()) / 1e6);
    c.put("key_lookup_first_s", us.front() / 1e6);
    c.put("key_lookups", us.size());
    c.put("cold_cache", 0);
    c.write(a.out, "table1");
  } else {
    std::string dbname = "ExTen" + std::to_string(a.domain) + "Proc" + std::to_string(a.n);
    flow_t r = main_flow(a, dbname, "fig13");
    method_row(a, "fig13", r, r.scan, "scan");
    method_row(a, "fig13", r, r.leaves, "leaves");
    method_row(a, "fig13", r, r.search, "hierarchy");

    csv_t c;
    common_cells(c, a, "table3");
    c.put("m", 2000000);
    c.put("k", 3);
    c.put("d", a.ratio);
    c.put("placement", "paper");
    c.put("domain_pct", a.domain);
    c.put("domain_mode", "random_with_replacement");
    c.put("query", a.value);
    c.put("queries", 1);
    long live = r.files_after_bloom.ldb;
    c.put("tables_live", live);
    c.put("leaf_filters_found", r.hier_found);
    c.put("entries_found", r.hier_entries);
    c.put("leaf_filters_scanned", r.hier_reached);
    c.put("leaf_filters_scanned_pct", live ? 100.0 * r.hier_reached / live : 0.0);
    c.put("internal_probes", r.walk.tested);
    c.put("internal_maybe", r.hier_maybe);
    c.put("time_s", r.search.their_ms / 1000.0);
    c.put("leaves_scan_leaf_filters_found", r.leaves_found);
    c.put("leaves_scan_entries_found", r.entries_found_leaves);
    c.write(a.out, "table3");
  }
  return 0;
}
