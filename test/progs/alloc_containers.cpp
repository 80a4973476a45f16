// alloc_containers: standard containers passed between std::threads, deterministic output.
//
// Producers build Records (strings, vectors, maps, a shared_ptr chain), transformers turn them
// into Results in other threads (so most objects are freed by a thread other than the one that
// allocated them), the main thread collects. stdout is a checksum that does not depend on the
// scheduling; it must be identical with and without LD_PRELOAD=libbobox.so.
// stderr reports whether bobox is the allocator answering ("bobox: active" / "bobox: absent").
// Usage: alloc_containers [items]   (default 60000)
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <dlfcn.h>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

uint64_t fnv(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = static_cast<const unsigned char *>(data);
    for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 1099511628211ull; }
    return h;
}
uint64_t fnv(uint64_t h, const std::string &s) { return fnv(h, s.data(), s.size()); }
uint64_t fnv(uint64_t h, uint64_t v) { return fnv(h, &v, sizeof v); }

template <class T> class Queue {
  public:
    void push(T v) {
        { std::lock_guard<std::mutex> g(mu_); q_.push_back(std::move(v)); }
        cv_.notify_one();
    }
    void close() {
        { std::lock_guard<std::mutex> g(mu_); closed_ = true; }
        cv_.notify_all();
    }
    std::optional<T> pop() {
        std::unique_lock<std::mutex> g(mu_);
        cv_.wait(g, [&] { return !q_.empty() || closed_; });
        if (q_.empty()) return std::nullopt;
        T v = std::move(q_.front());
        q_.pop_front();
        return v;
    }
  private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<T> q_;
    bool closed_ = false;
};

struct Record {
    int id;
    std::string name;
    std::vector<uint64_t> data;
    std::map<std::string, int> tags;
    std::list<std::string> notes;
    std::shared_ptr<const Record> parent;   // chain shared across threads
};

struct Result {
    int id;
    uint64_t digest;
    std::string summary;
    std::vector<std::string> words;
};

std::shared_ptr<Record> make_record(int id, const std::shared_ptr<const Record> &parent) {
    auto r = std::make_shared<Record>();
    r->id = id;
    r->name = "record-" + std::to_string(id) + "-" + std::string(size_t(id % 97), char('a' + id % 26));
    size_t n = size_t(id * 37 % 2000);
    if (id % 500 == 0) n = 100000 + size_t(id % 7) * 30000;   // a few medium/large vectors
    r->data.reserve(n / 2);   // force regrowth
    for (size_t i = 0; i < n; i++) r->data.push_back((uint64_t(id) * 2654435761u) ^ (i * 40503u));
    for (int t = 0; t < id % 20; t++) r->tags["tag" + std::to_string((id + t * 7) % 50)] += t;
    for (int t = 0; t < id % 5; t++) r->notes.push_back(std::string(size_t(10 + t * 100), char('A' + t)));
    r->parent = parent;
    return r;
}

Result transform(const Record &r) {
    Result out;
    out.id = r.id;
    std::vector<uint64_t> sorted = r.data;
    std::sort(sorted.begin(), sorted.end());
    uint64_t h = 14695981039346656037ull;
    for (uint64_t v : sorted) h = fnv(h, v);
    std::unordered_map<std::string, std::vector<std::string>> index;
    std::stringstream ss(r.name);
    std::string part;
    while (std::getline(ss, part, '-')) {
        index[part.substr(0, 1)].push_back(part);
        out.words.push_back(part);
    }
    std::set<std::string> keys;
    for (auto &kv : index) keys.insert(kv.first + ":" + std::to_string(kv.second.size()));
    for (auto &k : keys) h = fnv(h, k);
    for (auto &kv : r.tags) { h = fnv(h, kv.first); h = fnv(h, uint64_t(kv.second)); }
    for (auto &n : r.notes) h = fnv(h, n);
    int depth = 0;
    for (auto p = r.parent; p && depth < 8; p = p->parent, depth++) h = fnv(h, uint64_t(p->id));
    out.digest = h;
    std::ostringstream os;
    os << r.id << '/' << sorted.size() << '/' << r.tags.size() << '/' << depth;
    out.summary = os.str();
    return out;
}

void report_allocator() {
    using owns_fn = int (*)(const void *);
    owns_fn owns = reinterpret_cast<owns_fn>(dlsym(RTLD_DEFAULT, "bobox_owns"));
    auto s = std::make_unique<std::string>(1000, 'x');
    auto v = std::make_unique<std::vector<int>>(100000);
    bool ours = owns && owns(s.get()) == 1 && owns(s->data()) == 1 && owns(v->data()) == 1;
    fprintf(stderr, "bobox: %s\n", ours ? "active" : "absent");
}

} // namespace

int main(int argc, char **argv) {
    report_allocator();
    const int items = argc > 1 ? atoi(argv[1]) : 60000;
    const int producers = 3, transformers = 3;
    Queue<std::shared_ptr<Record>> records;
    Queue<std::unique_ptr<Result>> results;

    std::vector<std::thread> prod, trans;
    std::atomic<int> live_producers{producers};
    for (int p = 0; p < producers; p++)
        prod.emplace_back([&, p] {
            std::shared_ptr<const Record> prev;
            for (int id = p; id < items; id += producers) {
                auto r = make_record(id, prev);
                // keep chains short so most records die in the transformer threads
                prev = (id % 16 == p) ? nullptr : std::shared_ptr<const Record>(r);
                records.push(std::move(r));
            }
            if (--live_producers == 0) records.close();
        });
    std::atomic<int> live_transformers{transformers};
    for (int t = 0; t < transformers; t++)
        trans.emplace_back([&] {
            while (auto r = records.pop()) {
                auto res = std::make_unique<Result>(transform(**r));
                r->reset();   // frees the record (allocated by a producer) here
                results.push(std::move(res));
            }
            if (--live_transformers == 0) results.close();
        });

    std::vector<std::unique_ptr<Result>> by_id(static_cast<size_t>(items));
    std::map<size_t, int> word_hist;
    while (auto res = results.pop()) {
        word_hist[(*res)->words.size()]++;
        int id = (*res)->id;
        by_id[size_t(id)] = std::move(*res);
    }
    for (auto &t : prod) t.join();
    for (auto &t : trans) t.join();

    uint64_t h = 14695981039346656037ull;
    std::string big;
    for (auto &r : by_id) {
        if (!r) { printf("missing result\n"); return 1; }
        h = fnv(h, r->digest);
        h = fnv(h, r->summary);
        if (r->id % 1000 == 0) big += r->summary + ";";
    }
    printf("items %d\n", items);
    printf("checksum %016llx\n", static_cast<unsigned long long>(h));
    for (auto &kv : word_hist) printf("words %zu: %d\n", kv.first, kv.second);
    printf("summary-hash %016llx length %zu\n", static_cast<unsigned long long>(fnv(14695981039346656037ull, big)), big.size());
    return 0;
}
