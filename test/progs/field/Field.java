// Field: a small multi-threaded Java program for test/system/field_java.sh (GC and JIT threads
// start before main; four pool threads fill hash maps); prints a fixed result.
import java.util.*;
import java.util.concurrent.*;
public class Field {
    public static void main(String[] args) throws Exception {
        int threads = 4;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<Long>> parts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            final int seed = t;
            parts.add(pool.submit(() -> {
                Map<String, Integer> m = new HashMap<>();
                long sum = 0;
                for (int i = 0; i < 200000; i++) {
                    String k = "k" + ((i * 31 + seed) % 5000);
                    m.merge(k, i, Integer::sum);
                }
                for (int v : m.values()) sum += v;
                return sum;
            }));
        }
        long total = 0;
        for (Future<Long> f : parts) total += f.get();
        pool.shutdown();
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 100000; i++) sb.append(i % 10);
        System.out.println("total=" + total + " len=" + sb.length());
    }
}
